# -*- coding: utf-8 -*-
# The tutorial's 4-GPU tower trainer (TensorFlow 0.9 names), with only the import changed,
# print() for Python 3, and get_input() drawing random batches of in-memory digits with
# random_uniform + gather instead of a TFRecord queue.  Paths and step counts come from argv.
from datetime import datetime
import os
import sys
import time

import tfjupyter as tf
import mnist_inference

# 定义训练神经网络时需要用到的配置。
BATCH_SIZE = 100
LEARNING_RATE_BASE = 0.001
LEARNING_RATE_DECAY = 0.99
REGULARAZTION_RATE = 0.0001
TRAINING_STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
MOVING_AVERAGE_DECAY = 0.99
N_GPU = 4

# 定义日志和模型输出的路径。
MODEL_SAVE_PATH = sys.argv[1] if len(sys.argv) > 1 else "/tmp/logs_and_models/"
MODEL_NAME = "model.ckpt"


def get_input():
    digits = tf.datasets.load_digits().train
    images = tf.constant(digits.images * 255.0, name="train_images")
    labels = tf.constant(digits.labels.astype("int32"), name="train_labels")
    index = tf.random_uniform([BATCH_SIZE], 0, digits.num_examples, dtype=tf.int32)
    return tf.gather(images, index), tf.gather(labels, index)


# 定义损失函数。
def get_loss(x, y_, regularizer, scope):
    y = mnist_inference.inference(x, regularizer)
    cross_entropy = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(y, y_))
    regularization_loss = tf.add_n(tf.get_collection('losses', scope))
    loss = cross_entropy + regularization_loss
    return loss


# 计算每一个变量梯度的平均值。
def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = []
        for g, _ in grad_and_vars:
            expanded_g = tf.expand_dims(g, 0)
            grads.append(expanded_g)
        grad = tf.concat(0, grads)
        grad = tf.reduce_mean(grad, 0)
        v = grad_and_vars[0][1]
        grad_and_var = (grad, v)
        average_grads.append(grad_and_var)
    return average_grads


# 主训练过程。
def main(argv=None):
    with tf.Graph().as_default(), tf.device('/cpu:0'):
        x, y_ = get_input()
        regularizer = tf.contrib.layers.l2_regularizer(REGULARAZTION_RATE)

        global_step = tf.get_variable(
            'global_step', [], initializer=tf.constant_initializer(0),
            trainable=False)
        learning_rate = tf.train.exponential_decay(
            LEARNING_RATE_BASE, global_step, 60000 / BATCH_SIZE,
            LEARNING_RATE_DECAY)

        opt = tf.train.GradientDescentOptimizer(learning_rate)

        tower_grads = []
        for i in range(N_GPU):
            with tf.device('/gpu:%d' % i):
                with tf.name_scope('GPU_%d' % i) as scope:
                    cur_loss = get_loss(x, y_, regularizer, scope)
                    tf.get_variable_scope().reuse_variables()
                    grads = opt.compute_gradients(cur_loss)
                    tower_grads.append(grads)

        grads = average_gradients(tower_grads)
        for grad, var in grads:
            if grad is not None:
                tf.histogram_summary(
                    'gradients_on_average/%s' % var.op.name, grad)

        apply_gradient_op = opt.apply_gradients(
            grads, global_step=global_step)
        for var in tf.trainable_variables():
            tf.histogram_summary(var.op.name, var)

        variable_averages = tf.train.ExponentialMovingAverage(
            MOVING_AVERAGE_DECAY, global_step)
        variables_averages_op = variable_averages.apply(
            tf.trainable_variables())

        train_op = tf.group(apply_gradient_op, variables_averages_op)

        saver = tf.train.Saver(tf.all_variables())
        summary_op = tf.merge_all_summaries()
        init = tf.initialize_all_variables()

        with tf.Session(config=tf.ConfigProto(
                allow_soft_placement=True,
                log_device_placement=True)) as sess:
            init.run()
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            summary_writer = tf.train.SummaryWriter(
                MODEL_SAVE_PATH, sess.graph)

            for step in range(TRAINING_STEPS):
                start_time = time.time()
                _, loss_value = sess.run([train_op, cur_loss])
                duration = time.time() - start_time

                if step != 0 and step % 10 == 0:
                    num_examples_per_step = BATCH_SIZE * N_GPU
                    examples_per_sec = num_examples_per_step / duration
                    sec_per_batch = duration / N_GPU

                    format_str = ('step %d, loss = %.2f (%.1f examples/ '
                                  ' sec; %.3f sec/batch)')
                    print(format_str % (step, loss_value,
                                        examples_per_sec, sec_per_batch))

                    summary = sess.run(summary_op)
                    summary_writer.add_summary(summary, step)

                if step % 1000 == 0 or (step + 1) == TRAINING_STEPS:
                    checkpoint_path = os.path.join(
                        MODEL_SAVE_PATH, MODEL_NAME)
                    saver.save(sess, checkpoint_path, global_step=step)

            coord.request_stop()
            coord.join(threads)


if __name__ == '__main__':
    tf.app.run()
