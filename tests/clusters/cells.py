"""The seeds' between-graph program as %%tf_worker cells: only the cluster's names are given.

The model is tests/dist/between_graph_trainer.py's ``build``, sent as source (the engines cannot
import the tests), so the program trained by task processes started by hand and by a cluster's
engines is the same.
"""
import inspect
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "dist"))
import between_graph_trainer  # noqa: E402

TRAIN = inspect.getsource(between_graph_trainer.build) + '''
tf.reset_default_graph()
data, x, y, loss, accuracy, global_step, opt, train_op = build(
    num_workers, task_index, MODE, BACKUPS, cluster)
summaries = tf.summary.scalar("loss", loss)
hooks = [tf.train.StopAtStepHook(last_step=STEPS)]
if MODE == "sync":
    hooks.append(opt.make_session_run_hook(is_chief))
config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % task_index])
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, hooks=hooks,
                                       config=config, log_step_count_steps=0,
                                       checkpoint_dir=CHECKPOINT_DIR, save_checkpoint_secs=None,
                                       save_checkpoint_steps=SAVE_STEPS,
                                       max_wait_secs=120) as sess:
    while not sess.should_stop():
        images, labels = data.train.next_batch(50)
        _, step, _ = sess.run([train_op, global_step, summaries], {x: images, y: labels})
        if step // 100 != (step - 1) // 100:
            print("step", step, flush=True)
        if PAUSE:
            time.sleep(PAUSE)
with tf.Session(server.target, config=config) as sess:
    test_accuracy = float(sess.run(accuracy, {x: data.test.images, y: data.test.labels}))
print("accuracy %.3f" % test_accuracy)
'''


def train_cell(mode="async", backups=0, steps=300, checkpoint_dir=None, save_steps=None,
               pause=0.0) -> str:
    """The cell; with ``checkpoint_dir`` the chief saves every ``save_steps`` steps there (and
    restores from it when it opens a session again, e.g. after the ps restarted empty);
    ``pause``: seconds each worker sleeps after each step (training that lasts)."""
    return (f"import time\nMODE, BACKUPS, STEPS = {mode!r}, {backups}, {steps}\n"
            f"CHECKPOINT_DIR, SAVE_STEPS, PAUSE = {checkpoint_dir!r}, {save_steps!r}, {pause!r}\n"
            + TRAIN)
