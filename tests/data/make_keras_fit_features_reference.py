"""Makes tests/data/keras_fit_features_reference.json, the values
tests/test_keras_fit_features.py checks: TensorFlow 2.21 with tf_keras 2.21 in graph mode with
v2 behaviour off (Keras's v1 training loop and TF 1.15's metric names, 'acc'); the legacy
optimizers are TF 1.15's Keras optimizers. Run with TensorFlow:
    python tests/data/make_keras_fit_features_reference.py
"""
import os, json; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf
tf.compat.v1.disable_v2_behavior()
import tf_keras as keras
K = keras.backend
def fixed(shape, k):
    n = int(np.prod(shape)); return (np.sin(np.arange(n) * 0.7 + k) * 0.5).reshape(shape).astype(np.float32)
X = fixed((6, 3), 1.0) * 2
Y = keras.utils.to_categorical([0, 1, 2, 1, 0, 2], 3)
W = np.array([1.0, 0.5, 2.0, 0.0, 1.5, 1.0], np.float32)
out = {}
def floats(d): return {k: [float(v) for v in vs] for k, vs in d.items()}
def mlp(lr=0.1):
    m = keras.Sequential([keras.layers.Dense(4, activation='relu', input_shape=(3,)), keras.layers.Dense(3, activation='softmax')])
    m.set_weights([fixed(w.shape, i) for i, w in enumerate(m.get_weights())])
    m.compile(keras.optimizers.legacy.SGD(lr), 'categorical_crossentropy', metrics=['accuracy'])
    return m
# 1. learning rate as a variable
K.clear_session(); m = mlp()
out['lr_initial'] = float(K.get_value(m.optimizer.lr))
K.set_value(m.optimizer.lr, 0.5)
out['lr_after_set'] = float(K.get_value(m.optimizer.learning_rate))
m.train_on_batch(X, Y)
out['lr_set_weights'] = [w.tolist() for w in m.get_weights()]
K.clear_session(); m = mlp()
h = m.fit(X, Y, batch_size=4, epochs=3, shuffle=False, verbose=0,
          callbacks=[keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else lr)])
out['scheduler_history'] = floats(h.history); out['scheduler_weights'] = [w.tolist() for w in m.get_weights()]
K.clear_session(); m = mlp()
h = m.fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0,
          callbacks=[keras.callbacks.LearningRateScheduler(lambda epoch: 0.2 / (epoch + 1))])
out['scheduler_old_api_history'] = floats(h.history)
K.clear_session(); m = mlp(1.0)
h = m.fit(X, Y, batch_size=6, epochs=6, shuffle=False, verbose=0,
          callbacks=[keras.callbacks.ReduceLROnPlateau(monitor='acc', factor=0.5, patience=1, min_lr=0.2)])
out['plateau_history'] = floats(h.history)
for name, opt in (('sgd', lambda: keras.optimizers.legacy.SGD(0.1, momentum=0.5, decay=0.5)),
                  ('nesterov', lambda: keras.optimizers.legacy.SGD(0.1, momentum=0.9, nesterov=True)),
                  ('adam', lambda: keras.optimizers.legacy.Adam(0.05, decay=0.25))):
    K.clear_session(); m = mlp(); m.compile(opt(), 'categorical_crossentropy')
    for _ in range(3):
        m.train_on_batch(X, Y)
    out['decay_' + name] = {'lr': float(K.get_value(m.optimizer.lr)), 'iterations': int(K.get_value(m.optimizer.iterations)),
                            'trained': [w.tolist() for w in m.get_weights()]}
# 2. several inputs and outputs
def two_io(names=True):
    a = keras.Input(shape=(3,), name='a'); b = keras.Input(shape=(2,), name='b')
    h = keras.layers.Dense(4, activation='relu')(keras.layers.concatenate([a, b]))
    c = keras.layers.Dense(3, activation='softmax', **({'name': 'cls'} if names else {}))(h)
    r = keras.layers.Dense(1, **({'name': 'reg'} if names else {}))(h)
    m = keras.Model([a, b], [c, r]); m.set_weights([fixed(w.shape, i) for i, w in enumerate(m.get_weights())])
    return m
XB = fixed((6, 2), 2.0); YR = fixed((6, 1), 3.0)
K.clear_session(); m = two_io()
m.compile(keras.optimizers.legacy.SGD(0.1), loss={'cls': 'categorical_crossentropy', 'reg': 'mse'},
          loss_weights={'cls': 1.0, 'reg': 0.5}, metrics={'cls': ['accuracy'], 'reg': ['mae']})
h = m.fit({'a': X, 'b': XB}, {'cls': Y, 'reg': YR}, batch_size=4, epochs=2, shuffle=False, verbose=0)
out['multi_names'] = m.metrics_names; out['multi_history'] = floats(h.history)
out['multi_evaluate'] = [float(v) for v in m.evaluate([X, XB], [Y, YR], batch_size=4, verbose=0)]
out['multi_evaluate_weighted'] = [float(v) for v in m.evaluate([X, XB], [Y, YR], batch_size=4, verbose=0, sample_weight=[W, W[::-1].copy()])]
K.clear_session(); m = two_io(names=False)
m.compile('sgd', loss=['categorical_crossentropy', 'mse'], metrics=['accuracy', 'mse'])
out['multi_list_names'] = m.metrics_names
out['multi_list_evaluate'] = [float(v) for v in m.evaluate([X, XB], [Y, YR], verbose=0)]
K.clear_session(); m = two_io()
m.compile('sgd', loss='mse', loss_weights=[0.3, 2.0], metrics=[['accuracy'], []])
out['multi_nested_names'] = m.metrics_names
out['multi_nested_evaluate'] = [float(v) for v in m.evaluate([X, XB], [Y, YR], verbose=0)]
# 3. weights, validation, steps
K.clear_session(); m = mlp()
h = m.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, class_weight={0: 1.0, 1: 2.0, 2: 0.5})
out['class_weight_history'] = floats(h.history)
K.clear_session(); m = mlp()
h = m.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, sample_weight=W)
out['sample_weight_history'] = floats(h.history)
K.clear_session(); m = mlp()
h = m.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0, sample_weight=W, class_weight={0: 1.0, 1: 2.0, 2: 0.5})
out['both_weights_history'] = floats(h.history)
K.clear_session(); m = mlp()
out['evaluate_weighted'] = [float(v) for v in m.evaluate(X, Y, batch_size=4, sample_weight=W, verbose=0)]
K.clear_session(); m = mlp()
h = m.fit(X, Y, batch_size=2, epochs=2, shuffle=False, verbose=0, sample_weight=W, validation_split=0.5)
out['validation_split_history'] = floats(h.history)
K.clear_session(); m = mlp()
h = m.fit(X[:4], Y[:4], batch_size=2, epochs=2, shuffle=False, verbose=0, validation_data=(X[4:], Y[4:], W[4:]))
out['validation_data_weighted_history'] = floats(h.history)
K.clear_session(); m = mlp()
h = m.fit(X, Y, batch_size=4, epochs=3, initial_epoch=1, shuffle=False, verbose=0)
out['initial_epoch'] = h.epoch; out['initial_epoch_history'] = floats(h.history)
K.clear_session(); m = mlp()
h = m.fit(X, Y, steps_per_epoch=2, epochs=2, verbose=0)
out['steps_per_epoch_history'] = floats(h.history); out['steps_per_epoch_weights'] = [w.tolist() for w in m.get_weights()]
K.clear_session(); m = keras.Sequential([keras.layers.Dense(4, activation='relu', input_shape=(3,)), keras.layers.Dense(3, activation='softmax')])
m.set_weights([fixed(w.shape, i) for i, w in enumerate(m.get_weights())])
m.compile(keras.optimizers.legacy.SGD(0.1), 'sparse_categorical_crossentropy', metrics=['accuracy'], weighted_metrics=['accuracy'])
out['weighted_metrics_names'] = m.metrics_names
h = m.fit(X, np.array([0, 1, 2, 1, 0, 2]), batch_size=4, epochs=2, shuffle=False, verbose=0, sample_weight=W, class_weight={0: 3.0, 1: 1.0, 2: 0.5})
out['weighted_metrics_history'] = floats(h.history)
out['weighted_metrics_evaluate'] = [float(v) for v in m.evaluate(X, np.array([0, 1, 2, 1, 0, 2]), sample_weight=W, batch_size=4, verbose=0)]
K.clear_session(); m = two_io()
m.compile(keras.optimizers.legacy.SGD(0.1), loss=['categorical_crossentropy', 'mse'], metrics={'cls': 'accuracy'})
h = m.fit([X, XB], [Y, YR], batch_size=4, epochs=1, shuffle=False, verbose=0, class_weight={'cls': {0: 1.0, 1: 2.0, 2: 0.5}}, sample_weight={'reg': W})
out['multi_class_weight_history'] = floats(h.history)
K.clear_session(); m = mlp()
ds = tf.compat.v1.data.Dataset.from_tensor_slices((X, Y)).batch(4).repeat()
h = m.fit(ds, steps_per_epoch=2, epochs=2, verbose=0)
out['dataset_history'] = floats(h.history)
json.dump(out, open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'keras_fit_features_reference.json'), 'w'))
print(json.dumps({k: v for k, v in out.items() if 'weights' not in k}, indent=0))
