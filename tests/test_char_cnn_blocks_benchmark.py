"""`benchmarks.char_cnn_blocks` on the tiny biLM: one record per precision and block size over
the run's new words, the block size put back afterwards. No timing is asserted: the machine is
shared."""

from benchmarks import char_cnn_blocks
from benchmarks.common import conll_dev_sentences
from elmo_bilm.model import char_cnn


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
