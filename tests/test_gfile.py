"""tf.gfile and tf.io.gfile on the local file system, with TensorFlow's errors and semantics."""
import os

import pytest

import tfjupyter as tf


def test_gfile_writes_and_reads_text_and_binary(tmp_path):
    path = str(tmp_path / "a.txt")
    with tf.gfile.GFile(path, "w") as f:
        f.write("line one\n")
        f.write(b"line two\n")            # bytes are accepted in text mode too
        f.write("h\u00e9 three")
    assert f.closed
    with tf.gfile.GFile(path) as f:
        assert f.name == path and f.mode == "r"
        assert f.size() == len("line one\nline two\nh\u00e9 three".encode("utf-8"))
        assert f.readline() == "line one\n"
        assert f.tell() == 9
        assert f.read() == "line two\nh\u00e9 three"
        assert f.readline() == ""
        f.seek(0)
        assert f.read(4) == "line"
        f.seek(position=5)
        assert f.read(3) == "one"
    with tf.gfile.Open(path, "rb") as f:
        assert f.read() == "line one\nline two\nh\u00e9 three".encode("utf-8")
    with tf.gfile.FastGFile(path, "rb") as f:
        assert list(f) == [b"line one\n", b"line two\n", "h\u00e9 three".encode("utf-8")]
    with tf.gfile.GFile(path, "a") as f:
        f.write("\nfour")
    assert tf.gfile.GFile(path).readlines()[-2:] == ["h\u00e9 three\n", "four"]
    with tf.gfile.GFile(path, "r+") as f:     # read and write
        assert f.read(4) == "line"


def test_gfile_newlines_are_not_translated(tmp_path):
    path = str(tmp_path / "crlf")
    with tf.gfile.GFile(path, "wb") as f:
        f.write(b"a\r\nb")
    assert list(tf.gfile.GFile(path)) == ["a\r\n", "b"]


def test_gfile_opens_lazily_and_raises_tensorflow_errors(tmp_path):
    missing = str(tmp_path / "missing")
    f = tf.gfile.GFile(missing)                 # no error until the first read, as TF
    with pytest.raises(tf.errors.NotFoundError, match="missing"):
        f.read()
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.GFile(str(tmp_path / "no_dir" / "x"), "w").write("x")
    unwritten = str(tmp_path / "unwritten")
    tf.gfile.GFile(unwritten, "w").close()
    assert not tf.gfile.Exists(unwritten)       # TF creates the file on the first write
    path = str(tmp_path / "r")
    tf.gfile.GFile(path, "w").write("x")
    with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for writing"):
        tf.gfile.GFile(path).write("y")
    with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for reading"):
        tf.gfile.GFile(path, "w").read()
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode"):
        tf.gfile.GFile(path, "x")
    closed = tf.gfile.GFile(path)
    closed.close()
    with pytest.raises(tf.errors.FailedPreconditionError, match="closed"):
        closed.read()
    assert issubclass(tf.errors.NotFoundError, tf.errors.OpError)


def test_directories_exists_listing_and_removal(tmp_path):
    root = str(tmp_path / "root")
    assert not tf.gfile.Exists(root) and not tf.gfile.IsDirectory(root)
    tf.gfile.MakeDirs(os.path.join(root, "a", "b"))
    tf.gfile.MakeDirs(os.path.join(root, "a", "b"))          # exists already: fine
    assert tf.gfile.IsDirectory(os.path.join(root, "a", "b"))
    tf.gfile.MkDir(os.path.join(root, "c"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.MkDir(os.path.join(root, "c"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.MkDir(os.path.join(root, "x", "y"))         # the parent is missing
    for name in ("f1.txt", "f2.txt", "g.log"):
        tf.gfile.GFile(os.path.join(root, name), "w").write(name)
    assert sorted(tf.gfile.ListDirectory(root)) == ["a", "c", "f1.txt", "f2.txt", "g.log"]
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.ListDirectory(os.path.join(root, "nope"))
    assert tf.gfile.Glob(os.path.join(root, "f*.txt")) == [os.path.join(root, "f1.txt"),
                                                          os.path.join(root, "f2.txt")]
    assert tf.gfile.Glob([os.path.join(root, "*.log"), os.path.join(root, "c")]) == [
        os.path.join(root, "g.log"), os.path.join(root, "c")]
    assert tf.gfile.Glob(os.path.join(root, "nothing*")) == []

    st = tf.gfile.Stat(os.path.join(root, "f1.txt"))
    assert st.length == 6 and not st.is_directory and st.mtime_nsec > 0
    assert tf.gfile.Stat(root).is_directory
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Stat(os.path.join(root, "nope"))

    tf.gfile.Remove(os.path.join(root, "g.log"))
    assert not tf.gfile.Exists(os.path.join(root, "g.log"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Remove(os.path.join(root, "g.log"))
    tf.gfile.DeleteRecursively(os.path.join(root, "a"))
    assert not tf.gfile.Exists(os.path.join(root, "a"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.DeleteRecursively(os.path.join(root, "a"))


def test_rename_and_copy_refuse_to_overwrite_unless_asked(tmp_path):
    a, b, c = (str(tmp_path / n) for n in "abc")
    tf.gfile.GFile(a, "w").write("A")
    tf.gfile.GFile(b, "w").write("B")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Rename(a, b)
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Copy(a, b)
    tf.gfile.Copy(a, c)
    assert tf.gfile.GFile(c).read() == "A" and tf.gfile.Exists(a)
    tf.gfile.Copy(b, c, overwrite=True)
    assert tf.gfile.GFile(c).read() == "B"
    tf.gfile.Rename(a, b, overwrite=True)
    assert not tf.gfile.Exists(a) and tf.gfile.GFile(b).read() == "A"
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Rename(a, str(tmp_path / "d"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Copy(a, str(tmp_path / "d"))


def test_walk_lists_directories_top_down_or_bottom_up(tmp_path):
    root = str(tmp_path)
    tf.gfile.MakeDirs(os.path.join(root, "s", "t"))
    tf.gfile.GFile(os.path.join(root, "top.txt"), "w").write("x")
    tf.gfile.GFile(os.path.join(root, "s", "t", "leaf.txt"), "w").write("y")
    top_down = list(tf.gfile.Walk(root))
    assert top_down == [(root, ["s"], ["top.txt"]), (os.path.join(root, "s"), ["t"], []),
                        (os.path.join(root, "s", "t"), [], ["leaf.txt"])]
    assert list(tf.gfile.Walk(root, in_order=False)) == top_down[::-1]
    assert list(tf.gfile.Walk(os.path.join(root, "missing"))) == []


def test_io_gfile_has_the_lower_case_names(tmp_path):
    gfile = tf.io.gfile
    path = str(tmp_path / "d" / "f")
    gfile.makedirs(str(tmp_path / "d"))
    with gfile.GFile(path, "w") as f:
        f.write("z")
    assert gfile.exists(path) and gfile.isdir(str(tmp_path / "d"))
    assert gfile.listdir(str(tmp_path / "d")) == ["f"]
    assert gfile.glob(str(tmp_path / "d" / "*")) == [path]
    gfile.copy(path, path + "2")
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.rename(path, path + "2")
    gfile.rename(path, path + "3")
    assert gfile.stat(path + "3").length == 1
    assert [d for d, _, _ in gfile.walk(str(tmp_path))] == [str(tmp_path), str(tmp_path / "d")]
    errors = []
    assert list(gfile.walk(str(tmp_path / "missing"), onerror=errors.append)) == []
    assert isinstance(errors[0], tf.errors.NotFoundError)
    gfile.remove(path + "2")
    gfile.mkdir(str(tmp_path / "e"))
    gfile.rmtree(str(tmp_path / "d"))
    assert sorted(os.listdir(tmp_path)) == ["e"]
    assert tf.io.TFRecordWriter is tf.python_io.TFRecordWriter
