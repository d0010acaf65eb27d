"""The seeds' between-graph program as %%tf_worker cells: only the cluster's names are given."""

TRAIN = '''
tf.reset_default_graph()
data = tf.datasets.load_digits(seed=task_index)
with tf.device(tf.train.replica_device_setter(
        worker_device="/job:worker/task:%d" % task_index, cluster=cluster)):
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    w1 = tf.get_variable("w1", [64, 128], initializer=tf.truncated_normal_initializer(stddev=0.1))
    b1 = tf.get_variable("b1", [128], initializer=tf.zeros_initializer())
    w2 = tf.get_variable("w2", [128, 10], initializer=tf.truncated_normal_initializer(stddev=0.1))
    b2 = tf.get_variable("b2", [10], initializer=tf.zeros_initializer())
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    tf.summary.scalar("loss", loss)
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.GradientDescentOptimizer(0.3)
    if MODE == "sync":
        opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers - BACKUPS,
                                             total_num_replicas=num_workers)
    train_op = opt.minimize(loss, global_step=global_step)
    summaries = tf.summary.merge_all()

hooks = [tf.train.StopAtStepHook(last_step=STEPS)]
if MODE == "sync":
    hooks.append(opt.make_session_run_hook(is_chief))
config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % task_index])
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, hooks=hooks,
                                       config=config, log_step_count_steps=0,
                                       max_wait_secs=120) as sess:
    while not sess.should_stop():
        images, labels = data.train.next_batch(50)
        _, step, _ = sess.run([train_op, global_step, summaries], {x: images, y: labels})
        if step // 100 != (step - 1) // 100:
            print("step", step, flush=True)
with tf.Session(server.target, config=config) as sess:
    test_accuracy = float(sess.run(accuracy, {x: data.test.images, y: data.test.labels}))
print("accuracy %.3f" % test_accuracy)
'''


def train_cell(mode="async", backups=0, steps=300) -> str:
    return f"MODE, BACKUPS, STEPS = {mode!r}, {backups}, {steps}\n" + TRAIN
