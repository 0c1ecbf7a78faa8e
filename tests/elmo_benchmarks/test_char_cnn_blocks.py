"""`elmo_benchmarks.char_cnn_blocks` on the tiny biLM: one record per precision and block size over
the run's new words, the block size put back afterwards. No timing is asserted: the machine is
shared."""

import pytest
import torch

from elmo_benchmarks import char_cnn_blocks
from elmo_benchmarks.common import conll_dev_sentences
from elmo_bilm.model import char_cnn, onednn


def test_records_per_block_over_every_new_word_once(monkeypatch):
    sizes = []
    convolve = char_cnn.CharCnnEncoder.convolve_words

    def recorded(self, words, trim=True):
        sizes.append(char_cnn.WORD_BLOCK)
        return convolve(self, words, trim)

    monkeypatch.setattr(char_cnn.CharCnnEncoder, "convolve_words", recorded)
    default = char_cnn.WORD_BLOCK
    argv = ["--config", "tiny", "--sentences", "20", "--blocks", "0", "4"]
    records = char_cnn_blocks.main(argv + ["--precisions", "float32", "--repeats", "1"])
    assert char_cnn.WORD_BLOCK == default
    tokens = {token for sentence in conll_dev_sentences(20) for token in sentence}
    assert [(r["precision"], r["word_block"]) for r in records] == [("float32", 0), ("float32", 4)]
    assert all(r["words"] == len(tokens) + 2 for r in records)  # and <S>, </S>
    # block 0: each batch's words at once; then blocks of 4 (2 passes each: convolutions, encoder)
    largest = max(len(words) for words in char_cnn_blocks.new_words(*sentences_and_bilm()))
    half = len(sizes) // 2
    assert sizes[:half] == [largest] * half and sizes[half:] == [4] * half


def sentences_and_bilm():
    bilm = char_cnn_blocks.BiLm(char_cnn_blocks.CONFIGS["tiny"])
    return bilm, conll_dev_sentences(20)


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not available in this torch build")
def test_linear_rows_time_both_products_at_every_row_count_and_thread_count(monkeypatch):
    """`--linear-rows` with `--threads`: one record per (threads, rows), the packed product
    taken even below `MIN_LINEAR_ROWS` (then put back), torch's thread count restored."""
    calls = []
    linear = onednn.PackedWeights.linear

    def recorded(self, name, layer, x, index=0):
        calls.append((torch.get_num_threads(), x.shape[0], onednn.linear_applies(layer, x)))
        return linear(self, name, layer, x, index)

    monkeypatch.setattr(onednn.PackedWeights, "linear", recorded)
    threads, default = torch.get_num_threads(), onednn.MIN_LINEAR_ROWS
    argv = ["--config", "tiny", "--linear-rows", "2", "5", "--threads", "1", "2", "--repeats", "1"]
    records = char_cnn_blocks.main(argv)
    assert torch.get_num_threads() == threads and onednn.MIN_LINEAR_ROWS == default
    assert [(r["threads"], r["rows"]) for r in records] == [(1, 2), (1, 5), (2, 2), (2, 5)]
    assert all(r["features"] == 12 and {"linear_ms", "packed_ms"} <= set(r) for r in records)
    assert sorted(set(calls)) == [(1, 2, True), (1, 5, True), (2, 2, True), (2, 5, True)]
