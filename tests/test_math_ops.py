"""Math ops: elementwise values against numpy, broadcasting, dtypes, integer division, operators
and their TF op names, casts, add_n and matmul. (Gradients: test_math_gradients.py; reductions
and clipping: test_math_reductions.py.)"""
import warnings

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError
from tfjupyter.kernels.cpu import KERNELS


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


A = np.array([[1.5, -2.0, 3.0], [-4.0, 5.0, 0.5]], dtype=np.float32)
ROW = np.array([2.0, -0.5, 4.0], dtype=np.float32)
COL = np.array([[3.0], [-2.0]], dtype=np.float32)
ROW13 = np.array([[1.0, -3.0, 0.25]], dtype=np.float32)

BINARY = [
    (tf.add, np.add), (tf.subtract, np.subtract), (tf.multiply, np.multiply),
    (tf.divide, np.true_divide), (tf.truediv, np.true_divide), (tf.realdiv, np.true_divide),
    (tf.div, np.true_divide), (tf.floordiv, np.floor_divide), (tf.mod, np.remainder),
    (tf.floormod, np.remainder), (tf.maximum, np.maximum), (tf.minimum, np.minimum),
    (tf.squared_difference, lambda x, y: (x - y) ** 2), (tf.pow, np.power),
]


# -- binary ops and broadcasting ---------------------------------------------------------------------
@pytest.mark.parametrize("fn,ref", BINARY, ids=[f.__name__ for f, _ in BINARY])
@pytest.mark.parametrize("x,y", [(A, ROW), (COL, ROW13), (A, np.float32(2.5)),
                                 (np.float32(-1.5), A)], ids=["2x3+3", "2x1+1x3", "tensor+scalar",
                                                               "scalar+tensor"])
def test_binary_values_with_broadcasting(fn, ref, x, y):
    if fn is tf.pow:
        x = np.abs(x) + 0.5  # real powers of negative bases are NaN
    out = fn(tf.constant(x), tf.constant(y))
    expected = ref(x, y)
    assert out.dtype is tf.float32
    assert out.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(run(out), expected, rtol=1e-6)


def test_broadcast_static_shapes_with_unknown_dims():
    x = tf.placeholder(tf.float32, [None, 3])
    assert (x + ROW).shape.as_list() == [None, 3]
    assert (x * tf.placeholder(tf.float32, [4, 1, 1])).shape.as_list() == [4, None, 3]
    assert (x + tf.placeholder(tf.float32)).shape.ndims is None


def test_incompatible_shapes_fail_when_the_graph_is_built_naming_the_op():
    a = tf.constant(np.ones((2, 3), np.float32))
    b = tf.constant(np.ones(4, np.float32))
    with pytest.raises(ValueError) as info:
        a + b
    message = str(info.value)
    assert "'add'" in message and "[2,3]" in message and "[4]" in message
    assert "Dimensions must be equal, but are 3 and 4" in message
    with pytest.raises(ValueError, match="'my_sum'"):
        tf.add(a, b, name="my_sum")


def test_incompatible_shapes_fed_at_run_time_are_an_invalid_argument_error():
    x = tf.placeholder(tf.float32, [None])
    y = x + tf.constant([1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="add"):
        run(y, {x: np.ones(3)})


def test_dtype_mismatch_is_a_type_error_naming_the_op():
    a = tf.constant([1.0], tf.float32)
    b = tf.constant([1.0], tf.float64)
    with pytest.raises(TypeError) as info:
        tf.add(a, b, name="mixed")
    message = str(info.value)
    assert "'mixed'" in message and "float64" in message and "float32" in message
    with pytest.raises(TypeError, match="'mul'"):
        a * b


def test_python_scalars_take_the_tensor_dtype():
    x32 = tf.constant([1.0, 2.0], tf.float32)
    x64 = tf.constant([1.0, 2.0], tf.float64)
    i32 = tf.constant([1, 2], tf.int32)
    assert (x32 * 2).dtype is tf.float32
    assert (2 * x32).dtype is tf.float32
    assert (x64 + 0.5).dtype is tf.float64
    assert (i32 + 1).dtype is tf.int32
    assert tf.maximum(x64, 0).dtype is tf.float64
    np.testing.assert_array_equal(run(i32 * 3), [3, 6])
    with pytest.raises(TypeError):
        i32 + 1.5  # a fractional Python float is not an int32
    with pytest.raises(TypeError):
        x32 + "a"


def test_numpy_operands_on_either_side():
    x = tf.constant([1.0, 2.0, 3.0])
    left = np.array([10.0, 20.0, 30.0], np.float32) + x
    assert isinstance(left, tf.Tensor)
    np.testing.assert_allclose(run(left), [11, 22, 33])
    np.testing.assert_allclose(run(np.float32(2.0) * x), [2, 4, 6])
    m = np.eye(3, dtype=np.float32)
    np.testing.assert_allclose(run(m @ tf.reshape(x, [3, 1])), [[1], [2], [3]])


def test_scalar_mul():
    x = tf.constant([1.0, -2.0])
    out = tf.scalar_mul(3, x)
    assert out.op.type == "Mul" and out.dtype is tf.float32
    np.testing.assert_allclose(run(out), [3.0, -6.0])
    np.testing.assert_allclose(run(tf.scalar_mul(tf.constant(0.5), x)), [0.5, -1.0])
    with pytest.raises(ValueError, match="Only scalar multiply works"):
        tf.scalar_mul(tf.constant([1.0, 2.0]), x)


def test_realdiv_is_for_floats_only():
    with pytest.raises(TypeError, match="RealDiv"):
        tf.realdiv(tf.constant([1]), tf.constant([2]))


def test_scalar_operands_keep_numpy_scalar_semantics():
    p = tf.placeholder(tf.float32, [])
    i = tf.constant(7, tf.int32)
    outs = run([p + 1.5, p * 2, p / 4, p - tf.constant(0.5), i + 3, i * i, i < 8, p >= 3.0,
                tf.equal(i, 7), tf.not_equal(tf.constant(True), False),
                tf.constant(b"ab") + tf.constant(b"c")], {p: 3.0})
    assert outs[:4] == [4.5, 6.0, 0.75, 2.5] and all(type(o) is np.float32 for o in outs[:4])
    assert outs[4:6] == [10, 49] and all(type(o) is np.int32 for o in outs[4:6])
    assert outs[6:10] == [True, True, True, True] and all(type(o) is np.bool_ for o in outs[6:10])
    assert outs[10] == b"abc"


def test_add_concatenates_strings():
    out = tf.add(tf.constant([b"ab", b"c"]), tf.constant([b"x", b"yz"]))
    assert out.dtype is tf.string
    assert list(run(out)) == [b"abx", b"cyz"]


# -- integer division ------------------------------------------------------------------------------------
I = np.array([-7, 7, -7, 7, 6, -6], np.int32)
J = np.array([2, 2, -2, -2, 3, 3], np.int32)


def test_integer_floordiv_and_mod_round_toward_minus_infinity():
    x, y = tf.constant(I), tf.constant(J)
    q, r = run([x // y, x % y])
    np.testing.assert_array_equal(q, [-4, 3, 3, -4, 2, -2])
    np.testing.assert_array_equal(r, [1, 1, -1, -1, 0, 0])
    assert q.dtype == np.int32 and r.dtype == np.int32
    np.testing.assert_array_equal(run(tf.floordiv(x, y)), q)
    np.testing.assert_array_equal(run(tf.mod(x, y)), r)
    np.testing.assert_array_equal(run(tf.floormod(x, y)), r)


def test_tf_div_is_python2_division():
    ints = tf.div(tf.constant(I), tf.constant(J))
    assert ints.dtype is tf.int32 and ints.op.type == "FloorDiv" and ints.op.name == "div"
    np.testing.assert_array_equal(run(ints), [-4, 3, 3, -4, 2, -2])
    floats = tf.div(tf.constant([-7.0, 7.0]), tf.constant([2.0, 2.0]))
    assert floats.op.type == "RealDiv"
    np.testing.assert_allclose(run(floats), [-3.5, 3.5])
    np.testing.assert_array_equal(run(tf.constant(I).__div__(2)), [-4, 3, -4, 3, 3, -3])


def test_raw_div_op_truncates_integers_like_tensorflow():
    out = tf.get_default_graph().create_op("Div", [tf.constant(I), tf.constant(J)]).outputs[0]
    np.testing.assert_array_equal(run(out), [-3, 3, 3, -3, 2, -2])


def test_float_floordiv_and_mod():
    f, g = tf.constant([-7.0, 7.0, -5.5, 5.5]), tf.constant([2.0, 2.0, 2.0, -2.0])
    q, r = run([f // g, f % g])
    np.testing.assert_array_equal(q, [-4.0, 3.0, -3.0, -3.0])
    np.testing.assert_array_equal(r, [1.0, 1.0, 0.5, -0.5])


@pytest.mark.parametrize("dtype,expected", [(tf.int32, tf.float64), (tf.int64, tf.float64),
                                            (tf.int16, tf.float32), (tf.uint8, tf.float32),
                                            (tf.float32, tf.float32)])
def test_truediv_casts_integers_to_float(dtype, expected):
    x = tf.constant([7, 9], dtype)
    out = x / 2
    assert out.dtype is expected and out.op.type == "RealDiv" and out.op.name == "truediv"
    np.testing.assert_allclose(run(out), [3.5, 4.5])
    assert tf.truediv(x, tf.constant([2, 3], dtype)).dtype is expected


def test_truediv_rejects_bool():
    b = tf.constant([True])
    with pytest.raises(TypeError, match="Invalid dtype tf.bool in __truediv__"):
        b / b


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_integer_division_by_zero_is_an_error():
    x, zero = tf.constant([1, 2]), tf.constant([1, 0])
    for out in (x // zero, x % zero, tf.div(x, zero)):
        with pytest.raises(InvalidArgumentError, match="Integer division by zero"):
            run(out)
    np.testing.assert_array_equal(run(x / zero), [1.0, np.inf])  # true division: a float inf


def test_integer_power():
    np.testing.assert_array_equal(run(tf.constant([2, 3]) ** 3), [8, 27])
    with pytest.raises(InvalidArgumentError, match="negative integer powers"):
        run(tf.pow(tf.constant([2]), tf.constant([-1])))


# -- operators and op names ------------------------------------------------------------------------------
def test_operators_and_reflected_operators_against_numpy():
    xv = np.array([1.5, -2.0, 4.0], np.float32)
    x = tf.constant(xv)
    cases = [
        (x + 2, xv + 2), (2 + x, 2 + xv), (x - 2, xv - 2), (2 - x, 2 - xv), (x * 3, xv * 3),
        (3 * x, 3 * xv), (x / 4, xv / 4), (4 / x, 4 / xv), (x // 2, xv // 2), (7 // x, 7 // xv),
        (x % 1.5, xv % 1.5), (7 % x, 7 % xv), (abs(x) ** 2, np.abs(xv) ** 2),
        (2 ** x, 2 ** xv), (-x, -xv), (abs(x), np.abs(xv)),
    ]
    for out, expected in cases:
        assert out.dtype is tf.float32
        np.testing.assert_allclose(run(out), expected, rtol=1e-6)
    comparisons = [(x < 1.5, xv < 1.5), (x <= 1.5, xv <= 1.5), (x > 1.5, xv > 1.5),
                   (x >= 1.5, xv >= 1.5), (1.5 < x, 1.5 < xv), (0 >= x, 0 >= xv)]
    for out, expected in comparisons:
        assert out.dtype is tf.bool
        np.testing.assert_array_equal(run(out), expected)


def test_matmul_operator():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    product = a @ b
    assert (product.op.name, product.op.type) == ("matmul", "MatMul")
    np.testing.assert_allclose(run(product), [[2, 1], [4, 3]])
    np.testing.assert_allclose(run(b @ a), [[3, 4], [1, 2]])


def test_logical_operators():
    p = tf.constant([True, True, False, False])
    q = tf.constant([True, False, True, False])
    out = run([p & q, p | q, p ^ q, ~p, True & q, False | q, tf.logical_xor(p, q)])
    np.testing.assert_array_equal(out[0], [True, False, False, False])
    np.testing.assert_array_equal(out[1], [True, True, True, False])
    np.testing.assert_array_equal(out[2], [False, True, True, False])
    np.testing.assert_array_equal(out[3], [False, False, True, True])
    np.testing.assert_array_equal(out[4], [True, False, True, False])
    np.testing.assert_array_equal(out[5], [True, False, True, False])
    np.testing.assert_array_equal(out[6], out[2])
    with pytest.raises(TypeError, match="LogicalAnd"):
        tf.constant([1.0]) & tf.constant([1.0])


def test_operator_op_names_follow_tensorflow():
    x = tf.placeholder(tf.float32, [2], name="x")
    b = tf.placeholder(tf.bool, [2], name="b")
    y = x + 1
    assert (y.op.name, y.op.type) == ("add", "Add")
    assert [t.op.name for t in y.op.inputs] == ["x", "add/y"]
    assert (x + 1).op.name == "add_1"
    r = 2 - x
    assert r.op.name == "sub" and [t.op.name for t in r.op.inputs] == ["sub/x", "x"]
    names = {
        "mul": x * 2, "truediv": x / 2, "floordiv": x // 2, "mod": x % 2, "pow": x ** 2,
        "Neg": -x, "Abs": abs(x), "Less": x < 1, "LessEqual": x <= 1, "Greater": x > 1,
        "GreaterEqual": x >= 1, "and": b & b, "or": b | b, "xor": b ^ b, "LogicalNot": ~b,
    }
    for name, t in names.items():
        assert t.op.name == name, (name, t.op.name)
    assert (x < 1).op.inputs[1].op.name == "Less_1/y"
    assert (b ^ b).op.type == "LogicalAnd"


def test_api_function_op_names_follow_tensorflow():
    x = tf.placeholder(tf.float32, [2])
    i = tf.placeholder(tf.int32, [2])
    expected = [
        (tf.add(x, x), "Add", "Add"), (tf.subtract(x, x), "Sub", "Sub"),
        (tf.sub(x, x), "Sub_1", "Sub"), (tf.multiply(x, x), "Mul", "Mul"),
        (tf.mul(x, x), "Mul_1", "Mul"), (tf.pow(x, 2.0), "Pow", "Pow"),
        (tf.mod(i, 2), "FloorMod", "FloorMod"), (tf.floordiv(i, 2), "floordiv", "FloorDiv"),
        (tf.truediv(i, 2), "truediv", "RealDiv"), (tf.divide(x, 2.0), "truediv_1", "RealDiv"),
        (tf.maximum(x, x), "Maximum", "Maximum"), (tf.negative(x), "Neg", "Neg"),
        (tf.neg(x), "Neg_1", "Neg"), (tf.abs(x), "Abs", "Abs"), (tf.sigmoid(x), "Sigmoid", "Sigmoid"),
        (tf.squared_difference(x, x), "SquaredDifference", "SquaredDifference"),
        (tf.logical_xor(x > 0, x < 0), "LogicalXor", "LogicalAnd"), (tf.cast(i, tf.float32), "Cast", "Cast"),
        (tf.to_float(i), "ToFloat", "Cast"), (tf.add_n([x, x]), "AddN", "AddN"),
        (tf.matmul(tf.reshape(x, [1, 2]), tf.reshape(x, [2, 1])), "MatMul", "MatMul"),
        (tf.multiply(x, x, name="product"), "product", "Mul"),
    ]
    for t, name, op_type in expected:
        assert (t.op.name, t.op.type) == (name, op_type)


def test_tensor_equality_stays_identity():
    x = tf.constant([1.0])
    y = tf.constant([1.0])
    assert (x == x) is True and (x == y) is False and (x != y) is True
    assert len({x, y, x}) == 2


def test_unsupported_operand_objects_get_their_reflected_turn():
    class Other:
        def __radd__(self, tensor):
            return "handled"
    assert tf.constant([1.0]) + Other() == "handled"


def test_variables_in_expressions():
    v = tf.Variable([1.0, 2.0])
    out = 2 * v - v / 2 + v ** 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(out), [2.5, 7.0])


# -- unary ops ------------------------------------------------------------------------------------------
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = [
    (tf.negative, np.negative), (tf.abs, np.abs), (tf.square, np.square),
    (tf.sqrt, np.sqrt), (tf.rsqrt, lambda v: 1 / np.sqrt(v)), (tf.exp, np.exp),
    (tf.log, np.log), (tf.log1p, np.log1p), (tf.sigmoid, _sigmoid), (tf.tanh, np.tanh),
    (tf.sign, np.sign), (tf.reciprocal, np.reciprocal), (tf.floor, np.floor), (tf.ceil, np.ceil),
    (tf.round, np.round), (tf.sin, np.sin), (tf.cos, np.cos), (tf.tan, np.tan),
    (tf.asin, np.arcsin), (tf.acos, np.arccos), (tf.atan, np.arctan), (tf.expm1, np.expm1),
]
POSITIVE_ONLY = {tf.sqrt, tf.rsqrt, tf.log, tf.log1p}
UNIT_INTERVAL = {tf.asin, tf.acos}


@pytest.mark.parametrize("fn,ref", UNARY, ids=[f.__name__ for f, _ in UNARY])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_values(fn, ref, dtype):
    xv = np.array([[-2.5, -0.5, 0.3], [0.5, 1.5, 7.25]], dtype)
    if fn in POSITIVE_ONLY:
        xv = np.abs(xv)
    if fn in UNIT_INTERVAL:
        xv = xv / 8
    out = fn(tf.constant(xv))
    assert out.dtype is tf.as_dtype(dtype) and out.shape == xv.shape
    result = run(out)
    assert result.dtype == dtype
    np.testing.assert_allclose(result, ref(xv), rtol=1e-6 if dtype == np.float32 else 1e-13)


def test_unary_ops_on_scalars_give_numpy_scalars():
    result = run([tf.sigmoid(0.0), tf.rsqrt(4.0), tf.exp(tf.constant(0.0, tf.float64))])
    assert [type(r) for r in result] == [np.float32, np.float32, np.float64]
    assert result == [0.5, 0.5, 1.0]


def test_sigmoid_is_stable_and_accurate_in_the_tails():
    xv = np.array([-1000.0, -50.0, -20.0, 0.0, 20.0, 1000.0])
    for dtype in (np.float32, np.float64):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = run(tf.sigmoid(tf.constant(xv.astype(dtype))))
        np.testing.assert_allclose(out, [0.0, np.exp(-50.0), 2.0611536e-09, 0.5, 1.0, 1.0],
                                   rtol=1e-6)
    half = run(tf.sigmoid(tf.constant(np.array([-3.0, 0.0, 3.0], np.float16))))
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, _sigmoid(np.array([-3.0, 0.0, 3.0])), rtol=2e-3)


def test_is_nan_is_inf_is_finite():
    v = tf.constant([1.0, np.nan, np.inf, -np.inf])
    got = run([tf.is_nan(v), tf.is_inf(v), tf.is_finite(v)])
    np.testing.assert_array_equal(got[0], [False, True, False, False])
    np.testing.assert_array_equal(got[1], [False, False, True, True])
    np.testing.assert_array_equal(got[2], [True, False, False, False])
    assert all(g.dtype == np.bool_ for g in got)


def test_round_is_half_to_even_and_integers_pass_through():
    np.testing.assert_array_equal(run(tf.round([0.5, 1.5, 2.5, -0.5, -1.5, 2.6])),
                                  [0.0, 2.0, 2.0, -0.0, -2.0, 3.0])
    i = tf.constant([1, -3])
    assert tf.round(i) is i


def test_integer_unary_ops():
    iv = np.array([-3, 0, 4], np.int32)
    out = run([tf.negative(iv), tf.abs(iv), tf.square(iv), tf.sign(iv)])
    for got, expected in zip(out, [-iv, np.abs(iv), iv * iv, np.sign(iv)]):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, expected)


def test_unary_dtype_restrictions_are_type_errors():
    with pytest.raises(TypeError, match="'Sqrt'.*int32 not in list of allowed values"):
        tf.sqrt(tf.constant([4]))
    with pytest.raises(TypeError, match="Log"):
        tf.log(tf.constant([True]))


# -- comparisons --------------------------------------------------------------------------------------
def test_comparisons_broadcast_to_bool():
    x, y = tf.constant(A), tf.constant(ROW)
    fns = [(tf.less, np.less), (tf.less_equal, np.less_equal), (tf.greater, np.greater),
           (tf.greater_equal, np.greater_equal), (tf.equal, np.equal),
           (tf.not_equal, np.not_equal)]
    for fn, ref in fns:
        out = fn(x, y)
        assert out.dtype is tf.bool and out.shape == [2, 3]
        np.testing.assert_array_equal(run(out), ref(A, ROW))
    np.testing.assert_array_equal(run(tf.equal(x, 3.0)), A == 3.0)


def test_equal_on_strings_and_bools():
    np.testing.assert_array_equal(run(tf.equal(tf.constant([b"a", b"b"]), b"a")), [True, False])
    np.testing.assert_array_equal(run(tf.not_equal(tf.constant([True, False]), True)),
                                  [False, True])


def test_comparisons_have_no_gradient():
    x = tf.placeholder(tf.float32, [2])
    assert tf.gradients(tf.cast(x > 0, tf.float32), x) == [None]


# -- cast ---------------------------------------------------------------------------------------------
def test_cast_values_and_dtypes():
    f = tf.constant([1.7, -1.7, 2.5, 0.0])
    np.testing.assert_array_equal(run(tf.cast(f, tf.int32)), [1, -1, 2, 0])
    np.testing.assert_array_equal(run(tf.cast(f, tf.bool)), [True, True, True, False])
    np.testing.assert_array_equal(run(tf.cast(tf.constant([True, False]), tf.float32)), [1, 0])
    i = tf.constant([1, 2])
    for fn, dtype, name in [(tf.to_float, tf.float32, "ToFloat"), (tf.to_double, tf.float64, "ToDouble"),
                            (tf.to_int64, tf.int64, "ToInt64"), (tf.to_int32, tf.int32, None)]:
        out = fn(i)
        assert out.dtype is dtype
        if name:
            assert out.op.name == name and out.op.get_attr("DstT") is dtype
        assert run(out).dtype == dtype.as_numpy_dtype
    assert tf.cast(i, tf.int32) is i
    assert tf.cast([1.5, 2.5], "float64").dtype is tf.float64
    with pytest.raises(TypeError, match="not supported"):
        tf.cast(tf.constant(["1"]), tf.float32)


# -- add_n ---------------------------------------------------------------------------------------------
def test_add_n_values_and_single_input():
    a, b, c = (np.random.RandomState(k).rand(2, 3).astype(np.float32) for k in range(3))
    out = tf.add_n([tf.constant(a), tf.constant(b), tf.constant(c)])
    assert out.shape == [2, 3]
    np.testing.assert_allclose(run(out), a + b + c, rtol=1e-6)
    np.testing.assert_allclose(run(tf.accumulate_n([tf.constant(a), tf.constant(b)])), a + b)
    single = tf.constant(a)
    assert tf.add_n([single]) is single
    assert tf.add_n([single], name="total").op.name == "total"
    assert run(tf.add_n([tf.constant(1.0), tf.constant(2.0), 3.0])) == 6.0


def test_add_n_does_not_write_into_its_inputs():
    v = tf.Variable([1.0, 2.0])
    total = tf.add_n([v.value(), v.value(), v.value()])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(total), [3.0, 6.0])
        np.testing.assert_allclose(sess.run(total), [3.0, 6.0])
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0])


def test_add_n_errors():
    with pytest.raises(ValueError, match="Shapes must be equal rank"):
        tf.add_n([tf.ones([2, 3]), tf.ones([3])])
    with pytest.raises(TypeError, match="AddN"):
        tf.add_n([tf.ones([2]), tf.ones([2], tf.float64)])
    with pytest.raises(ValueError, match="at least one Tensor"):
        tf.add_n([])
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(InvalidArgumentError, match="must have the same size and shape"):
        run(tf.add_n([x, tf.ones([2])]), {x: np.ones(3)})
    with pytest.raises(TypeError, match="tensor_dtype"):
        tf.accumulate_n([tf.ones([2])], tensor_dtype=tf.float64)


# -- matmul -----------------------------------------------------------------------------------------
def test_matmul_values_and_transposes():
    rng = np.random.RandomState(0)
    a, b = rng.rand(3, 4).astype(np.float32), rng.rand(4, 5).astype(np.float32)
    cases = [(a, b, {}), (a.T.copy(), b, {"transpose_a": True}),
             (a, b.T.copy(), {"transpose_b": True}),
             (a.T.copy(), b.T.copy(), {"transpose_a": True, "transpose_b": True}),
             (a.T.copy(), b, {"adjoint_a": True, "a_is_sparse": True}),
             (a, b.T.copy(), {"adjoint_b": True, "b_is_sparse": True})]
    for x, y, kwargs in cases:
        out = tf.matmul(x, y, **kwargs)
        assert out.shape == [3, 5] and out.op.type == "MatMul"
        np.testing.assert_allclose(run(out), a @ b, rtol=1e-5)
    np.testing.assert_array_equal(run(tf.matmul([[1, 2]], [[3], [4]])), [[11]])


def test_matmul_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 1 for 'MatMul'"):
        tf.matmul(tf.ones([1, 2]), tf.ones([1, 2]))
    with pytest.raises(ValueError, match="rank 2"):
        tf.matmul(tf.ones([2]), tf.ones([2, 2]))
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a"):
        tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), transpose_a=True, adjoint_a=True)
    with pytest.raises(TypeError, match="MatMul"):
        tf.matmul(tf.ones([2, 2]), tf.ones([2, 2], tf.float64))


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_float32_matmul_kernel_small_and_split(ta, tb):
    """Small products go straight to the BLAS; big ones are split by rows over the CPU
    backend's threads while a step runs the BLAS single-threaded: both must be exact."""
    from tfjupyter.kernels.cpu._threads import single_threaded_blas
    rng = np.random.RandomState(2)
    for m, k, n in ((2, 3, 4), (300, 256, 200)):
        a = rng.rand(*((k, m) if ta else (m, k))).astype(np.float32)
        b = rng.rand(*((n, k) if tb else (k, n))).astype(np.float32)
        kernel = KERNELS.get("MatMul")(tf.matmul(a, b, transpose_a=ta, transpose_b=tb).op, None)
        expected = (a.T if ta else a) @ (b.T if tb else b)
        with single_threaded_blas:
            got = kernel(a, b)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_batch_matmul_values():
    rng = np.random.RandomState(1)
    x, y = rng.rand(2, 3, 4), rng.rand(2, 4, 5)
    out = tf.matmul(x, y)
    assert out.op.type == "BatchMatMul" and out.shape == [2, 3, 5]
    np.testing.assert_allclose(run(out), x @ y)
    xt, yt = np.swapaxes(x, 1, 2).copy(), np.swapaxes(y, 1, 2).copy()
    np.testing.assert_allclose(run(tf.batch_matmul(xt, yt, adj_x=True, adj_y=True)), x @ y)
    np.testing.assert_allclose(run(tf.matmul(xt, y, transpose_a=True)), x @ y)
    broadcast = tf.matmul(x, rng.rand(4, 6))
    assert broadcast.op.type == "BatchMatMulV2" and broadcast.shape == [2, 3, 6]
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.matmul(x, x)
    with pytest.raises(ValueError, match="Batch dimensions"):
        tf.batch_matmul(rng.rand(2, 3, 4), rng.rand(3, 4, 5))


def test_batch_matmul_checks_batch_dims_fed_at_run_time():
    x = tf.placeholder(tf.float64, [None, 2, 2])
    out = tf.batch_matmul(x, np.ones((3, 2, 2)))
    np.testing.assert_allclose(run(out, {x: np.ones((3, 2, 2))}), np.full((3, 2, 2), 2.0))
    with pytest.raises(InvalidArgumentError, match="batch dimensions"):
        run(out, {x: np.ones((1, 2, 2))})


def test_pow_one_half_follows_c_pow_at_negative_zero_and_infinity():
    # TensorFlow's Pow is C's pow: pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf (C99 F.9.4.4),
    # where sqrt (numpy's shortcut for a scalar 0.5) gives -0 and NaN.
    x = np.array([-0.0, -np.inf, np.inf, 0.0, 2.25, -1.0], np.float32)
    got = run(tf.pow(tf.constant(x), 0.5))
    np.testing.assert_array_equal(got, [0.0, np.inf, np.inf, 0.0, 1.5, np.nan])
    assert not np.signbit(got[0])
    got = run(tf.pow(tf.constant(np.array([-0.0, -8.0])), tf.constant(np.array([0.5, 1.0 / 3.0]))))
    assert got[0] == 0.0 and not np.signbit(got[0]) and np.isnan(got[1])
