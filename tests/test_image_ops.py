"""tf.image and tf.random_crop: values against TensorFlow 1.x's documented semantics.

The resize goldens were computed with TensorFlow 2.21's tf.compat.v1.image (legacy, not
half-pixel, sampling); the rest is checked against numpy formulas written from TF's docs.
"""
import numpy as np
import pytest

import tfjupyter as tf

IMG = (np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4, 1)) ** 1.5
WEIGHTS = np.linspace(-1, 1, 2 * 5 * 6).astype(np.float32).reshape(2, 5, 6, 1)

GOLDEN = {  # image 0, channel 0 of each result (TensorFlow 2.21, tf.compat.v1)
    "bilinear": [[0., 0.6666667, 1.6094759, 2.828427, 4.406911, 5.196152],
                 [4.8, 6.338803, 8.055314, 9.949534, 12.110256, 13.190618],
                 [10.925484, 13.204677, 15.590218, 18.082108, 20.769224, 22.112783],
                 [19.701935, 22.458025, 25.30325, 28.23761, 31.339436, 32.89035],
                 [22.627417, 25.542473, 28.540926, 31.622776, 34.86284, 36.482872]],
    "bilinear_align": [[0., 0.6, 1.3656855, 2.4627419, 3.7755175, 5.196152],
                       [4., 5.2541018, 6.6246724, 8.22818, 10.000893, 11.858206],
                       [8., 9.908204, 11.883659, 13.993619, 16.226267, 18.52026],
                       [15.313708, 17.579586, 19.904106, 22.34592, 24.896542, 27.501566],
                       [22.627417, 25.250967, 27.924555, 30.698221, 33.566814, 36.482872]],
    "nearest": [[0., 0., 1., 2.828427, 2.828427, 5.196152],
                [0., 0., 1., 2.828427, 2.828427, 5.196152],
                [8., 8., 11.18034, 14.6969385, 14.6969385, 18.52026],
                [8., 8., 11.18034, 14.6969385, 14.6969385, 18.52026],
                [22.627417, 22.627417, 27., 31.622776, 31.622776, 36.482872]],
    "nearest_align": [[0., 2.828427, 5.196152], [22.627417, 31.622776, 36.482872]],
    "bilinear_grad": [[-1.7423729, -1.6632769, -1.960452, -1.8338983],
                      [-1.3559322, -1.2655367, -1.4463276, -1.3016951],
                      [-0.80000013, -0.6870057, -0.68926555, -0.5084747]],
    "nearest_grad": [[-3.5254235, -1.661017, -3.118644, -1.457627],
                     [-1.898305, -0.84745765, -1.4915254, -0.6440678],
                     [-0.33898306, -0.118644066, -0.13559322, -0.016949153]],
}


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_resize_bilinear_and_nearest_match_tensorflow():
    x = tf.constant(IMG)
    out = run({"bilinear": tf.image.resize_bilinear(x, [5, 6]),
               "bilinear_align": tf.image.resize_bilinear(x, [5, 6], align_corners=True),
               "nearest": tf.image.resize_nearest_neighbor(x, [5, 6]),
               "nearest_align": tf.image.resize_nearest_neighbor(x, [2, 3], align_corners=True)})
    for key, value in out.items():
        np.testing.assert_allclose(value[0, :, :, 0], GOLDEN[key], rtol=1e-5, atol=1e-5)
    assert out["bilinear"].dtype == np.float32 and out["bilinear"].shape == (2, 5, 6, 1)


def test_resize_gradients_match_tensorflow_and_numerical():
    x = tf.constant(IMG)
    w = tf.constant(WEIGHTS)
    g_bil = tf.gradients(tf.reduce_sum(tf.image.resize_bilinear(x, [5, 6]) * w), x)[0]
    g_nn = tf.gradients(tf.reduce_sum(tf.image.resize_nearest_neighbor(x, [5, 6]) * w), x)[0]
    got_bil, got_nn = run([g_bil, g_nn])
    np.testing.assert_allclose(got_bil[0, :, :, 0], GOLDEN["bilinear_grad"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_nn[0, :, :, 0], GOLDEN["nearest_grad"], rtol=1e-5, atol=1e-6)
    # Bilinear resizing is linear in the image: the gradient is d(sum(w * R x))/dx = R^T w,
    # so <R x, w> = <x, grad> for any x.
    resized = run(tf.image.resize_bilinear(x, [5, 6]))
    assert np.isclose((resized * WEIGHTS).sum(), (IMG * got_bil).sum(), rtol=1e-5)


def test_resize_images_keeps_3d_and_dtype_rules():
    img = np.random.RandomState(0).randint(0, 255, (4, 6, 3)).astype(np.uint8)
    x = tf.constant(img)
    bil = tf.image.resize_images(x, [8, 3])
    nn = tf.image.resize_images(x, [8, 12], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    same = tf.image.resize_images(x, [4, 6])
    assert bil.shape.as_list() == [8, 3, 3] and bil.dtype == tf.float32
    assert nn.dtype == tf.uint8 and same is x
    got_nn = run(nn)
    np.testing.assert_array_equal(got_nn, img.repeat(2, axis=0).repeat(2, axis=1))
    with pytest.raises(NotImplementedError, match="BICUBIC"):
        tf.image.resize_images(x, [8, 3], method=tf.image.ResizeMethod.BICUBIC)


def test_resize_bad_input_names_the_op():
    with pytest.raises(ValueError, match="rank 4"):
        tf.image.resize_bilinear(tf.zeros([3, 4]), [2, 2])
    with pytest.raises(ValueError, match="must be positive"):
        tf.image.resize_bilinear(tf.zeros([1, 3, 4, 1]), [0, 2])
    size = tf.placeholder(tf.int32, [2])
    r = tf.image.resize_nearest_neighbor(tf.zeros([1, 3, 4, 1]), size, name="shrink")
    with pytest.raises(Exception, match="shrink.*positive"):
        run(r, {size: [2, -1]})


def test_flips_and_transpose():
    img = np.arange(2 * 3 * 2).reshape(2, 3, 2)
    x = tf.constant(img)
    lr, ud, tr = run([tf.image.flip_left_right(x), tf.image.flip_up_down(x),
                      tf.image.transpose_image(x)])
    np.testing.assert_array_equal(lr, img[:, ::-1])
    np.testing.assert_array_equal(ud, img[::-1])
    np.testing.assert_array_equal(tr, img.transpose(1, 0, 2))


def test_random_flips_pick_one_of_two_and_batches_flip_per_image():
    img = np.arange(3 * 4 * 1).reshape(3, 4, 1)
    flip = tf.image.random_flip_left_right(tf.constant(img))
    seen = set()
    with tf.Session() as sess:
        for _ in range(40):
            out = sess.run(flip)
            assert np.array_equal(out, img) or np.array_equal(out, img[:, ::-1])
            seen.add(np.array_equal(out, img))
    assert seen == {True, False}
    batch = np.arange(16 * 2 * 3 * 1).reshape(16, 2, 3, 1)
    got = run(tf.image.random_flip_up_down(tf.constant(batch), seed=3))
    flipped = [np.array_equal(g, b[::-1]) for g, b in zip(got, batch)]
    kept = [np.array_equal(g, b) for g, b in zip(got, batch)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)


def test_crop_or_pad_centres_crops_and_pads_evenly():
    img = np.arange(1, 5 * 7 + 1, dtype=np.float32).reshape(5, 7, 1)
    x = tf.constant(img)
    smaller = tf.image.resize_image_with_crop_or_pad(x, 3, 4)
    bigger = tf.image.resize_image_with_crop_or_pad(x, 8, 10)
    mixed = tf.image.resize_image_with_crop_or_pad(x, 2, 9)
    assert smaller.shape.as_list() == [3, 4, 1] and bigger.shape.as_list() == [8, 10, 1]
    s, b, m = run([smaller, bigger, mixed])
    np.testing.assert_array_equal(s, img[1:4, 1:5])              # offsets (5-3)//2, (7-4)//2
    expected = np.zeros((8, 10, 1), np.float32)
    expected[1:6, 1:8] = img                                      # pads (8-5)//2, (10-7)//2 first
    np.testing.assert_array_equal(b, expected)
    expected = np.zeros((2, 9, 1), np.float32)
    expected[:, 1:8] = img[1:3]
    np.testing.assert_array_equal(m, expected)
    # Unknown height and width: decided when the step runs.
    p = tf.placeholder(tf.float32, [None, None, 1])
    dyn = tf.image.resize_image_with_crop_or_pad(p, 3, 4)
    assert dyn.shape.as_list() == [3, 4, 1]
    np.testing.assert_array_equal(run(dyn, {p: img}), img[1:4, 1:5])


def test_crop_and_pad_to_bounding_box_check_bounds():
    x = tf.zeros([4, 5, 3])
    with pytest.raises(ValueError, match="width must be >= target \\+ offset"):
        tf.image.crop_to_bounding_box(x, 0, 2, 2, 4)
    with pytest.raises(ValueError, match="width must be <= target - offset"):
        tf.image.pad_to_bounding_box(x, 0, 2, 6, 6)
    batch = np.arange(2 * 4 * 5 * 1).reshape(2, 4, 5, 1)
    got = run(tf.image.crop_to_bounding_box(tf.constant(batch), 1, 2, 2, 3))
    np.testing.assert_array_equal(got, batch[:, 1:3, 2:5])


def test_random_crop_takes_windows_of_the_input():
    img = np.arange(6 * 8 * 3).reshape(6, 8, 3)
    crop = tf.random_crop(tf.constant(img), [4, 5, 3])
    assert crop.shape.as_list() == [4, 5, 3]
    corners = set()
    with tf.Session() as sess:
        for _ in range(60):
            out = sess.run(crop)
            top, left = divmod(int(out[0, 0, 0]) // 3, 8)
            np.testing.assert_array_equal(out, img[top:top + 4, left:left + 5])
            corners.add((top, left))
    assert {t for t, _ in corners} == {0, 1, 2} and {l for _, l in corners} == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="need value.shape >= size"):
        tf.random_crop(tf.constant(img), [7, 5, 3])


def test_brightness_and_contrast():
    rng = np.random.RandomState(2)
    img = rng.uniform(0, 1, (4, 5, 3)).astype(np.float32)
    x = tf.constant(img)
    bright, contrast = run([tf.image.adjust_brightness(x, 0.25), tf.image.adjust_contrast(x, 1.5)])
    np.testing.assert_allclose(bright, img + 0.25, rtol=1e-6)
    mean = img.mean(axis=(0, 1), keepdims=True)
    np.testing.assert_allclose(contrast, (img - mean) * 1.5 + mean, rtol=1e-5, atol=1e-6)
    # Integer images are adjusted in [0, 1] units and saturate when converted back.
    u8 = np.array([[[10], [250]]], np.uint8)
    np.testing.assert_array_equal(run(tf.image.adjust_brightness(tf.constant(u8), 0.1)),
                                  [[[35], [255]]])
    with tf.Session() as sess:
        rb, rc = tf.image.random_brightness(x, 0.3), tf.image.random_contrast(x, 0.5, 0.8)
        for _ in range(10):
            b, c = sess.run([rb, rc])
            delta = b - img
            assert np.allclose(delta, delta.flat[0], atol=1e-6) and -0.3 <= delta.flat[0] < 0.3
            factor = (c - mean) / (img - mean)
            assert 0.5 <= np.median(factor) < 0.8
    with pytest.raises(ValueError, match="max_delta must be non-negative"):
        tf.image.random_brightness(x, -1)
    with pytest.raises(ValueError, match="upper must be > lower"):
        tf.image.random_contrast(x, 0.5, 0.5)


def test_per_image_standardization():
    rng = np.random.RandomState(3)
    img = rng.randint(0, 256, (5, 4, 3)).astype(np.uint8)
    batch = rng.uniform(size=(2, 3, 3, 2)).astype(np.float32)
    flat = np.full((2, 2, 1), 7.0, np.float32)
    a, b, c = run([tf.image.per_image_standardization(tf.constant(img)),
                   tf.image.per_image_standardization(tf.constant(batch)),
                   tf.image.per_image_standardization(tf.constant(flat))])
    x = img.astype(np.float64)
    np.testing.assert_allclose(a, (x - x.mean()) / max(x.std(), 1 / np.sqrt(x.size)), rtol=1e-5)
    for got, one in zip(b, batch):   # image 1's stddev (0.19) is below 1/sqrt(18): the floor wins
        scale = max(one.std(), 1 / np.sqrt(one.size))
        np.testing.assert_allclose(got, (one - one.mean()) / scale, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(c, np.zeros_like(flat))   # no division by a zero stddev
    assert a.dtype == np.float32


def test_convert_image_dtype():
    u8 = np.array([0, 128, 255], np.uint8)
    f = run(tf.image.convert_image_dtype(tf.constant(u8), tf.float32))
    np.testing.assert_allclose(f, u8 / 255.0, rtol=1e-6)
    back = run(tf.image.convert_image_dtype(tf.constant(np.array([0.0, 0.5, 1.0], np.float32)),
                                            tf.uint8))
    np.testing.assert_array_equal(back, [0, 127, 255])     # x * (255 + 0.5), truncated
    wide = run(tf.image.convert_image_dtype(tf.constant(u8), tf.int32))
    np.testing.assert_array_equal(wide, u8.astype(np.int64) * (2 ** 31 // 256))


def test_resize_runs_on_cpu_when_a_device_scope_names_a_gpu_it_has_no_kernel_for():
    # Ops without a GPU kernel must still place under a GPU scope with soft placement.
    with tf.device("/gpu:0"):
        r = tf.image.resize_bilinear(tf.constant(IMG), [5, 6])
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        np.testing.assert_allclose(sess.run(r)[0, :, :, 0], GOLDEN["bilinear"], rtol=1e-5)


def _encoded(fmt: str, pixels: np.ndarray, **kwargs) -> bytes:
    import io
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt, **kwargs)
    return buf.getvalue()


def test_decode_png_is_lossless_and_converts_channels():
    rng = np.random.RandomState(5)
    rgba = rng.randint(0, 256, (6, 5, 4)).astype(np.uint8)
    data = tf.placeholder(tf.string, [])
    as_is = tf.image.decode_png(data)
    rgb = tf.image.decode_png(data, channels=3)
    wide = tf.image.decode_png(data, channels=4, dtype=tf.uint16)
    assert rgb.shape.as_list() == [None, None, 3] and wide.dtype == tf.uint16
    got, got_rgb, got_wide = run([as_is, rgb, wide], {data: _encoded("PNG", rgba)})
    np.testing.assert_array_equal(got, rgba)
    np.testing.assert_array_equal(got_rgb, rgba[:, :, :3])
    np.testing.assert_array_equal(got_wide, rgba.astype(np.uint16) * 257)   # 8 -> 16 bit scale


def test_decode_jpeg_channels_and_bad_data():
    gray = np.tile(np.arange(0, 256, 16, dtype=np.uint8), (16, 1))
    data = tf.placeholder(tf.string, [])
    g, rgb = run([tf.image.decode_jpeg(data), tf.image.decode_jpeg(data, channels=3)],
                 {data: _encoded("JPEG", gray, quality=95)})
    assert g.shape == (16, 16, 1) and rgb.shape == (16, 16, 3) and g.dtype == np.uint8
    assert np.abs(g[:, :, 0].astype(int) - gray).mean() < 3          # lossy, but close
    np.testing.assert_array_equal(rgb[:, :, 0], rgb[:, :, 2])          # gray expanded to RGB
    bad = tf.image.decode_jpeg(data, name="broken_jpeg")
    with pytest.raises(tf.errors.InvalidArgumentError, match="broken_jpeg.*invalid image data"):
        run(bad, {data: b"not a jpeg"})
    with pytest.raises(ValueError, match="channels must be one of"):
        tf.image.decode_jpeg(data, channels=2)
