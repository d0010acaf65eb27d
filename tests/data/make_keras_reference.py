"""Makes tests/data/keras_reference.json, the values tests/test_keras_reference.py checks:
TensorFlow 2.21 with tf_keras 2.21 in graph mode (Keras's v1 training loop, TF 1.15's
semantics; the legacy optimizers are TF 1.15's Keras optimizers). Run with TensorFlow:
    python tests/data/make_keras_reference.py
"""
import os, json; os.environ["TF_CPP_MIN_LOG_LEVEL"]="3"
import numpy as np, tensorflow as tf
tf.compat.v1.disable_eager_execution()
import tf_keras as keras
def fixed(shape, k):
    n = int(np.prod(shape)); return (np.sin(np.arange(n) * 0.7 + k) * 0.5).reshape(shape).astype(np.float32)
X = fixed((6, 3), 1.0) * 2
Y = keras.utils.to_categorical([0, 1, 2, 1, 0, 2], 3)
out = {}
def mlp(act='softmax', units=3):
    m = keras.Sequential([keras.layers.Dense(4, activation='relu', input_shape=(3,)), keras.layers.Dense(units, activation=act)])
    m.set_weights([fixed(w.shape, i) for i, w in enumerate(m.get_weights())]); return m
m = mlp(); out['predict'] = m.predict(X).tolist()
for name, opt in [('sgd', keras.optimizers.legacy.SGD(0.1)), ('momentum', keras.optimizers.legacy.SGD(0.1, momentum=0.9)),
                  ('adam', keras.optimizers.legacy.Adam(0.01)), ('rmsprop', keras.optimizers.legacy.RMSprop(0.01))]:
    keras.backend.clear_session()
    m = mlp(); m.compile(opt, 'categorical_crossentropy', metrics=['accuracy'])
    before = m.evaluate(X, Y, verbose=0)
    m.train_on_batch(X, Y); m.train_on_batch(X, Y)
    out[name] = {'before': [float(v) for v in before], 'after': [float(v) for v in m.evaluate(X, Y, verbose=0)],
                 'weights': [w.tolist() for w in m.get_weights()]}
keras.backend.clear_session()
m = mlp(); m.compile('sgd', 'sparse_categorical_crossentropy', metrics=['accuracy'])
out['sparse'] = [float(v) for v in m.evaluate(X, np.array([0, 1, 2, 1, 0, 2]), verbose=0)]
keras.backend.clear_session()
m = mlp('sigmoid', 1); m.compile('sgd', 'binary_crossentropy', metrics=['accuracy'])
out['binary'] = [float(v) for v in m.evaluate(X, np.array([[0], [1], [1], [0], [1], [0]]), verbose=0)]
keras.backend.clear_session()
m = mlp(None, 2); m.compile('sgd', 'mse')
out['mse'] = float(m.evaluate(X, fixed((6, 2), 3.0), verbose=0))
# CNN
keras.backend.clear_session()
c = keras.Sequential([keras.layers.Conv2D(2, 3, padding='same', activation='relu', input_shape=(6, 6, 1)),
                      keras.layers.MaxPooling2D(), keras.layers.AveragePooling2D(pool_size=(1, 2)),
                      keras.layers.Flatten(), keras.layers.Dense(2)])
c.set_weights([fixed(w.shape, i) for i, w in enumerate(c.get_weights())])
XI = fixed((2, 6, 6, 1), 0.3)
out['cnn'] = c.predict(XI).tolist()
out['cnn_names'] = [v.name for v in c.weights]
# BN + dropout
keras.backend.clear_session()
b = keras.Sequential([keras.layers.Dense(3, input_shape=(3,)), keras.layers.BatchNormalization(), keras.layers.Dropout(0.5), keras.layers.Dense(2, activation='softmax')])
b.set_weights([fixed(w.shape, i) for i, w in enumerate(b.get_weights())])
out['bn_names'] = [v.name for v in b.weights]
out['bn_predict'] = b.predict(X).tolist()
b.compile(keras.optimizers.legacy.SGD(0.0), 'categorical_crossentropy')
b.train_on_batch(X, Y[:, :2])
out['bn_moving'] = [w.tolist() for w in b.get_weights()[4:6]]
# Embedding
keras.backend.clear_session()
e = keras.Sequential([keras.layers.Embedding(5, 2, input_length=3), keras.layers.Flatten(), keras.layers.Dense(1)])
e.set_weights([fixed(w.shape, i) for i, w in enumerate(e.get_weights())])
out['emb'] = e.predict(np.array([[0, 1, 4], [3, 3, 2]])).tolist()
out['emb_names'] = [v.name for v in e.weights]
# functional with concat/add
keras.backend.clear_session()
a = keras.Input(shape=(3,)); h1 = keras.layers.Dense(2)(a); h2 = keras.layers.Dense(2)(a)
cat = keras.layers.concatenate([h1, h2]); s = keras.layers.add([h1, h2]); o = keras.layers.Dense(1)(keras.layers.concatenate([cat, s]))
f = keras.Model(a, o); f.set_weights([fixed(w.shape, i) for i, w in enumerate(f.get_weights())])
out['func'] = f.predict(X).tolist()
# LSTM and GRU: TF 1.15's v1 layers (hard_sigmoid, unit_forget_bias, GRU reset_after=False),
# unrolled here (the same numbers; TF 2's while-loop gradient needs unrolling in v1 graphs).
from tf_keras.src.layers.rnn import gru_v1, lstm_v1
XS = fixed((2, 5, 3), 0.5) * 2
for name, cls in (("lstm", lstm_v1.LSTM), ("gru", gru_v1.GRU)):
    keras.backend.clear_session()
    m = keras.Sequential([cls(4, return_sequences=True, input_shape=(5, 3), unroll=True),
                          cls(3, go_backwards=True, unroll=True), keras.layers.Dense(1)])
    m.set_weights([fixed(w.shape, i) for i, w in enumerate(m.get_weights())])
    out[name] = m.predict(XS).tolist()
    m.compile(keras.optimizers.legacy.SGD(0.1), 'mse')
    m.train_on_batch(XS, np.array([[0.5], [-0.5]]))
    out[name + "_trained"] = [w.tolist() for w in m.get_weights()]
json.dump(out, open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'keras_reference.json'), 'w'))
