from elmo_benchmarks.cache_repeats import measure


def test_the_benchmark_counts_each_row_once():
    # SQuAD's validation batches hold each paragraph once per question: repeats are counted,
    # and the biLM sees fewer rows than the batches hold
    record = measure("validation", 1, None)
    assert record["rows"] == record["bilm_rows"] + record["repeats_in_batch"] + record["hits"]
    assert 0 < record["bilm_rows"] < record["rows"] and record["repeats_in_batch"] > 0
    assert record["bilm_tokens"] < record["tokens"]
