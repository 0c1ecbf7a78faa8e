import os

import torch


def test_tests_run_on_the_cpu_even_where_a_gpu_is_visible():
    # tests/conftest.py hides GPUs from the tests and their subprocesses (AllenNLP would train on one)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and not torch.cuda.is_available()
