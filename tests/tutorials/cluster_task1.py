# The tutorial's two-task cluster, second task, with its constant placed on task 1.
import sys

import tfjupyter as tf

ports = sys.argv[1:3] or ["2222", "2223"]
with tf.device("/job:local/task:1"):
    c = tf.constant("Hello from server2!")
# 和第一个程序一样的集群配置。集群中的每一个任务需要采用相同的配置。
cluster = tf.train.ClusterSpec(
    {"local": ["localhost:%s" % ports[0], "localhost:%s" % ports[1]]})
# 指定task_index为1,所以这个程序将在localhost:2223启动服务。
server = tf.train.Server(cluster, job_name="local", task_index=1)
sess = tf.Session(
    server.target, config=tf.ConfigProto(log_device_placement=True))
print(sess.run(c))
server.join()
