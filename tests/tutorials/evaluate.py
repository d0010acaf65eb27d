# The tutorial series' evaluation program (article 5's mnist_eval, shortened): restores the
# moving-average weights from the latest checkpoint into a fresh graph and tests them.
import sys

import tfjupyter as tf
import mnist_inference

MOVING_AVERAGE_DECAY = 0.99


def evaluate(model_dir):
    digits = tf.datasets.load_digits().test
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, mnist_inference.INPUT_NODE], name='x-input')
        y_ = tf.placeholder(tf.int64, [None], name='y-input')
        y = mnist_inference.inference(x, None)
        correct_prediction = tf.equal(tf.argmax(y, 1), y_)
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY)
        variables_to_restore = variable_averages.variables_to_restore()
        saver = tf.train.Saver(variables_to_restore)
        with tf.Session() as sess:
            ckpt = tf.train.get_checkpoint_state(model_dir)
            saver.restore(sess, ckpt.model_checkpoint_path)
            global_step = ckpt.model_checkpoint_path.split('/')[-1].split('-')[-1]
            score = sess.run(accuracy, feed_dict={x: digits.images * 255.0, y_: digits.labels})
            print("After %s training step(s), test accuracy = %g" % (global_step, score))


if __name__ == '__main__':
    evaluate(sys.argv[1])
