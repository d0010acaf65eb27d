"""Between-graph replication, as in TensorFlow's distributed how-to: every worker process builds
its own graph, replica_device_setter puts the variables on the ps tasks, and
MonitoredTrainingSession makes task 0 the chief. Trains a digits classifier.

    python between_graph_trainer.py --cluster JSON --job worker --task 0 --mode sync
"""
import argparse
import json
import time

import tfjupyter as tf


def build(num_workers, task, mode, backups, cluster):
    data = tf.datasets.load_digits(seed=task)
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % task, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        w1 = tf.get_variable("w1", [64, 128], initializer=tf.truncated_normal_initializer(stddev=0.1))
        b1 = tf.get_variable("b1", [128], initializer=tf.zeros_initializer())
        w2 = tf.get_variable("w2", [128, 10], initializer=tf.truncated_normal_initializer(stddev=0.1))
        b2 = tf.get_variable("b2", [10], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(0.3)
        if mode == "sync":
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers - backups,
                                                 total_num_replicas=num_workers)
        train_op = opt.minimize(loss, global_step=global_step)
    return data, x, y, loss, accuracy, global_step, opt, train_op


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--task", type=int, required=True)
    parser.add_argument("--mode", choices=["async", "sync"], default="async")
    parser.add_argument("--backups", type=int, default=0)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--straggle", type=float, default=0.0, help="seconds to sleep each step")
    parser.add_argument("--logdir", default=None)
    parser.add_argument("--save-steps", type=int, default=None, help="checkpoint every N steps")
    args = parser.parse_args()

    cluster = tf.train.ClusterSpec(json.loads(args.cluster))
    server = tf.train.Server(cluster, job_name=args.job, task_index=args.task)
    if args.job == "ps":
        print("ps ready", flush=True)
        server.join(600)
        return
    num_workers = cluster.num_tasks("worker")
    data, x, y, loss, accuracy, global_step, opt, train_op = build(
        num_workers, args.task, args.mode, args.backups, cluster)
    is_chief = args.task == 0
    # Each worker talks to the ps tasks and itself only, not to the other workers.
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % args.task])
    hooks = [tf.train.StopAtStepHook(last_step=args.steps)]
    if args.mode == "sync":
        hooks.append(opt.make_session_run_hook(is_chief))
    local_steps, start = 0, time.time()
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           checkpoint_dir=args.logdir, hooks=hooks,
                                           save_checkpoint_secs=None, max_wait_secs=120,
                                           save_checkpoint_steps=args.save_steps,
                                           config=config,
                                           log_step_count_steps=0) as sess:
        while not sess.should_stop():
            images, labels = data.train.next_batch(50)
            _, step = sess.run([train_op, global_step], {x: images, y: labels})
            local_steps += 1
            if local_steps % 50 == 0:
                print("step", step, flush=True)
            if args.straggle:
                time.sleep(args.straggle)
    elapsed = time.time() - start
    with tf.Session(server.target, config=config) as sess:
        score, step = sess.run([accuracy, global_step],
                               {x: data.test.images, y: data.test.labels})
    print(json.dumps({"task": args.task, "local_steps": local_steps, "global_step": int(step),
                      "accuracy": float(score), "seconds": elapsed}), flush=True)
    server.stop(1)


if __name__ == "__main__":
    main()
