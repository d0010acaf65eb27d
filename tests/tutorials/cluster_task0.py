# The tutorial's two-task cluster, first task (ports from argv so tests can use free ones).
import sys

import tfjupyter as tf

ports = sys.argv[1:3] or ["2222", "2223"]
c = tf.constant("Hello from server1!")
# 生成一个有两个任务的集群,一个任务跑在本地2222端口,另外一个跑在本地2223端口。
cluster = tf.train.ClusterSpec(
    {"local": ["localhost:%s" % ports[0], "localhost:%s" % ports[1]]})
# 通过上面生成的集群配置生成Server,并通过job_name和task_index指定当前所启动的任务。
server = tf.train.Server(cluster, job_name="local", task_index=0)
# 通过server.target生成会话来使用TensorFlow集群中的资源。
sess = tf.Session(
    server.target, config=tf.ConfigProto(log_device_placement=True))
print(sess.run(c))
server.join()
