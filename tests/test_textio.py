import pytest

from biaseval.errors import DataError
from biaseval.data.textio import read_lines


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"a\nb\nc", ["a", "b", "c"]),
        (b"a\nb\nc\n", ["a", "b", "c"]),
        (b"a\r\nb\r\nc\r\n", ["a", "b", "c"]),
        (b"a\nb\n\n\n  \n", ["a", "b"]),  # trailing empty lines are ignored
        (b"a\n\nc\n", ["a", "", "c"]),  # inner empty lines are items
        (b"\xef\xbb\xbfa\nb", ["a", "b"]),  # BOM dropped
        (b"", []),
    ],
)
def test_read_lines(tmp_path, raw, expected):
    path = tmp_path / "f.txt"
    path.write_bytes(raw)
    assert read_lines(path) == expected


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\nok\nbad \xff here\n")
    with pytest.raises(DataError, match=r"bad\.txt:3: not valid UTF-8"):
        read_lines(path)
