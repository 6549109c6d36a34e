"""String tensors (issue #22): NumPy object (or str) arrays in, object arrays of str out."""
import numpy as np
import pytest

import session as ses


def test_string_normalizer_takes_and_gives_object_arrays():
    g = ses.Graph()
    x = g.placeholder("x", "string", [4])
    y = g.op("StringNormalizer", [x], case_change_action="UPPER", stopwords="monday")
    with ses.Session(g) as s:
        out = s.eval(y, {x: np.array(["monday", "Tuesday", "héllo", "MONDAY"], dtype=object)})
    assert out.dtype == object
    assert out.tolist() == ["TUESDAY", "HÉLLO"]


def test_numpy_str_arrays_are_fed_as_strings():
    g = ses.Graph()
    x = g.placeholder("x", "string", [2])
    y = g.op("Cast", [x], to=1)
    with ses.Session(g) as s:
        out = s.eval(y, {x: np.array(["1.5", "-2"])})
    assert out.dtype == np.float32 and out.tolist() == [1.5, -2.0]


def test_a_string_constant_round_trips():
    g = ses.Graph()
    c = g.constant("c", np.array([["a", "b"], ["c", "日本"]], dtype=object))
    with ses.Session(g) as s:
        out = s.eval(c)
    assert out.shape == (2, 2) and out[1, 1] == "日本"


def test_non_str_elements_and_nul_characters_are_refused():
    g = ses.Graph()
    with pytest.raises(TypeError, match="element 1 of a string array is int, not str"):
        g.constant("bad", np.array(["a", 3], dtype=object))
    with pytest.raises(ValueError, match="holds a NUL character"):
        g.constant("nul", np.array(["a\0b"], dtype=object))
