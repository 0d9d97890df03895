/*
 * The environment variables coll sets and reads, for coll(7) and the
 * ENVIRONMENT sections of the tools' pages. Defaults are the code's:
 * keep them in step with the getenv() calls in core/ and cmd/.
 */
#include <stddef.h>

#include "doc.h"

const struct envvar envvar_table[] = {
	{ "COLL_UNIQUE_ID", NULL, "The job's unique id, coll1:JOB:SECRET@ADDR:PORT: where the "
	    "root service listens and the 128-bit secret every connection proves it knows. "
	    "Several ids joined by commas make comm_init_env() join with comm_init_scalable(), "
	    "each id's root serving one contiguous block of ranks. "
	    "comm_init_env() joins the job it names; collcheck runs as a rank when it is set and "
	    "as the front end otherwise. It holds a secret: collrun hands it to remote ranks on "
	    "their standard input, never on a command line.", ENV_RANK | ENV_CORE },
	{ "COLL_ROOT_VIA", NULL, "ADDR:PORT of a root proxy that carries this rank's root "
	    "connection, set by collrun's tree launch (--tree) for the ranks below its first layer "
	    "of hosts: each relay's proxy passes the connections of the hosts it started up to the proxy "
	    "above it, so the root holds one connection per first-layer relay, not one per rank. "
	    "It applies to the job's own id (COLL_UNIQUE_ID, and its shrinks and splits); an "
	    "unreadable value is ignored and the root is reached directly.", ENV_RANK | ENV_CORE },
	{ "COLL_RANK", NULL, "This rank's number, 0 to COLL_SIZE-1; read by comm_init_env().",
	    ENV_RANK | ENV_CORE },
	{ "COLL_SIZE", NULL, "The number of ranks in the job; read by comm_init_env().",
	    ENV_RANK | ENV_CORE },
	{ "COLL_LOCAL_RANK", NULL, "This rank's position among the ranks on the same host, in "
	    "rank order.", ENV_RANK },
	{ "COLL_LOCAL_SIZE", NULL, "The number of ranks on this rank's host.", ENV_RANK },
	{ "COLL_JOBID", NULL, "The job id in 16 hexadecimal digits, as in the unique id, the "
	    "status pages and the job record.", ENV_RANK },
	{ "RANK", NULL, "torchrun's name for COLL_RANK.", ENV_RANK },
	{ "WORLD_SIZE", NULL, "torchrun's name for COLL_SIZE.", ENV_RANK },
	{ "LOCAL_RANK", NULL, "torchrun's name for COLL_LOCAL_RANK.", ENV_RANK },
	{ "LOCAL_WORLD_SIZE", NULL, "torchrun's name for COLL_LOCAL_SIZE.", ENV_RANK },
	{ "GROUP_RANK", NULL, "The index of this rank's host in the job's host list (torchrun's "
	    "node rank).", ENV_RANK },
	{ "MASTER_ADDR", NULL, "For torchrun's rendezvous: the address of rank 0's host "
	    "(127.0.0.1 for a local job, the address collrun reached it at over SSH, the first "
	    "node of the step under Slurm).", ENV_RANK },
	{ "MASTER_PORT", NULL, "For torchrun's rendezvous: a port that was free on this machine "
	    "when the job started (29500 if none could be found).", ENV_RANK },
	{ "COLL_DEBUG", NULL, "WARN, INFO or TRACE (any case): log to standard error at that "
	    "level, each line prefixed with host, pid and rank. Unset or any other value logs "
	    "nothing.",
	    ENV_CORE },
	{ "COLL_TIMEOUT", "300", "Seconds any wait (joining, a collective, a transfer) may go "
	    "without progress before it fails with a timeout; 0.001 to 604800, other values mean "
	    "the default.", ENV_CORE },
	{ "COLL_KEEPALIVE_MS", "1000", "How often, in milliseconds, each rank and the root "
	    "service ping each other when nothing else passes between them; 10 to 600000, other "
	    "values mean the default. A rank tells the root its own setting when it joins.",
	    ENV_CORE },
	{ "COLL_KEEPALIVE_LIMIT", "30", "After this many keep-alive intervals without a word "
	    "the root declares a rank dead (and every other rank of its communicator hears it), "
	    "and a rank declares the root lost; 2 to 100000, other values mean the default. Dead "
	    "processes are seen at once, from their closed connections: the limit catches hosts "
	    "that went down or were cut off.", ENV_CORE },
	{ "COLL_RETRY_MAX", "3", "How many times a collective whose data connection broke "
	    "while both of its ends live is run again on fresh connections, when every rank "
	    "stopped at it with its input intact; 0 to 1000, 0 turns retries off. An op that a "
	    "dead rank was in is never retried.", ENV_CORE },
	{ "COLL_RETRY_INTERVAL_MS", "100", "The pause, in milliseconds, before each such "
	    "rerun; 0 to 600000.", ENV_CORE },
	{ "COLL_RETRY_SAVE_BYTES", "16777216", "In-place inputs up to this many bytes are "
	    "copied before each op so that a rerun can start from them; a larger in-place op can "
	    "be run again only while it has received nothing. 0 to 2^40.", ENV_CORE },
	{ "COLL_FAULT", NULL, "Fault injection, to rehearse a failure: RANK@SEQ:ACTION[,...] "
	    "makes rank RANK (the process's rank in the first communicator it joined, the job's "
	    "rank under collrun, or * for every rank) fail at "
	    "the collective with sequence number SEQ (from 1, as error messages show it), by "
	    "ACTION: exit (exit 1), kill (SIGKILL itself), hang, close (close a data connection "
	    "mid-op), delay=MS or corrupt (a bad data header). Each fault fires at most once per "
	    "process; after a shrink the new communicator counts ops afresh from 1. A "
	    "malformed value fails comm_init() naming the bad item. FAULTS.md in the coll "
	    "sources has examples. Unset or empty, nothing is injected.", ENV_CORE },
	{ "COLL_SOCKET_IFNAME", NULL, "The interfaces to listen on, as "
	    "NCCL_SOCKET_IFNAME: a comma-separated list of name prefixes (eth), exact names after "
	    "= (=eth0), or names to leave out after ^ (^docker,lo). The front end's root service "
	    "listens there too, and under Slurm it then hands out that address instead of the "
	    "one srun reached each node from (SLURM_LAUNCH_NODE_IPADDR). Unset, any interface "
	    "will do.", ENV_CORE | ENV_FRONT },
	{ "COLL_STATUS_DIR", "/dev/shm", "Where each rank publishes its status page "
	    "(coll.JOB.COMM.RANK), which collstack reads while a job hangs.", ENV_CORE | ENV_FRONT },
	{ "COLL_JOB_DIR", "/tmp/coll-UID/jobs", "Where collrun keeps a JSON record of each "
	    "running job (job id, launcher, hosts, pids), removed when the job ends.", ENV_FRONT },
	{ "COLL_RD_MAX_BYTES", "32768", "The largest all-reduce, in bytes, done by recursive "
	    "doubling; larger ones use the pipelined ring, except up to 256 KiB where the ring's "
	    "blocks (bytes / ranks) would be at most 16 KiB, which go by halving (Rabenseifner's "
	    "reduce-scatter and all-gather).", ENV_CORE },
	{ "COLL_ALLREDUCE_ALGO", NULL, "ring, doubling or halving: every all-reduce over TCP "
	    "by that algorithm, whatever its size (to compare; every rank must set the same). "
	    "Unset: chosen by size and ranks. COLL_DEBUG=INFO logs each communicator's first "
	    "all-reduce by each algorithm.", ENV_CORE },
	{ "COLL_NTHREADS", NULL, "Threads that drive a large op's connections to a peer, "
	    "1 to 16. Unset: chosen from the speed of the link the rank talks on (1 up to "
	    "10 Gb/s, 2 from 10 Gb/s, 4 from 100 Gb/s, 8 on loopback), never more than half "
	    "of this rank's share of the cores (the cores over COLL_LOCAL_SIZE). With "
	    "COLL_NSOCKS it sets the lanes: connections per pair of ranks, each carrying its "
	    "own slice of a large all-reduce, reduce-scatter, all-gather, broadcast or reduce, "
	    "as NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD. "
	    "Every rank offers its count and a communicator uses the fewest any rank offers; "
	    "collcheck's header shows it. A value out of range stops the rank's init with its "
	    "name.", ENV_CORE },
	{ "COLL_NSOCKS", NULL, "Connections per peer each of those threads drives, 1 to 16. "
	    "Unset: 2 from 25 Gb/s, else 1.", ENV_CORE },
	{ "COLL_LANE_MIN_BYTES", "65536", "The smallest slice, in bytes, worth a lane of its "
	    "own: an op of fewer than 2 x this many bytes runs on one connection, as small ops "
	    "gain nothing from more. Ranks that set it differently use the largest any sets.",
	    ENV_CORE },
	{ "COLL_ZEROCOPY", "auto", "MSG_ZEROCOPY for the large sends of an op: 1 pins the "
	    "buffer's pages instead of copying them into the socket (the op then ends only when "
	    "the kernel gives them back), 0 always copies, auto tries it on each connection and "
	    "stops where the kernel says it copied anyway (loopback, veth, a NIC without "
	    "scatter-gather). Any other value stops the rank's init with its name.", ENV_CORE },
	{ "COLL_ZEROCOPY_MIN_BYTES", "1048576", "The fewest bytes an op must send to one peer "
	    "for its sends to go zero-copy; calls under 32 KiB always copy.", ENV_CORE },
	{ "COLL_SNDBUF", "auto", "The send buffer, in bytes, of each data connection: auto "
	    "asks 262144 (the kernel caps it at net.core.wmem_max, then doubles it) on "
	    "connections between ranks of one host, whose "
	    "bytes in flight otherwise crowd the ranks' buffers out of the CPU caches, and leaves "
	    "every other connection to the kernel's autotuning; 0 leaves every one to the kernel; "
	    "a count in 4096..2^30 sets it on every one (the kernel caps it at "
	    "net.core.wmem_max). Any other value stops the rank's init with its name.",
	    ENV_CORE },
	{ "COLL_SPIN", "20 or 2000", "How many times a transfer with nothing to move yields the CPU "
	    "before it sleeps in poll(2); 0 sleeps at once, which saves CPU and costs latency. "
	    "Unset: 2000 where the rank has 4 cores or more of its own (those it is bound to, "
	    "or the host's over COLL_LOCAL_SIZE), else 20.",
	    ENV_CORE },
	{ "COLL_FS_ROOT", "/", "A directory that stands for / where collcheck's fact readers and "
	    "colltop's workers read /sys, /proc and /etc (PCIe links and ACS, RDMA ports, network "
	    "interfaces, CPUs, NUMA nodes, host name, kernel, memory, modules, the NVIDIA "
	    "driver's version, os-release, nccl.conf): a fixture tree, for tests. collcheck "
	    "reads neither NVML nor libibverbs when it is set; collstack always reads the "
	    "host's own /proc.", ENV_CORE },
	{ "COLL_SHM_DIR", "/dev/shm", "The shared-memory file system whose size collcheck "
	    "reports.", ENV_CORE },
	{ "COLL_NCCL_LIBRARY", "libnccl.so.2", "The NCCL library collcheck loads, to report its "
	    "version and path and to run --engine nccl (a name the loader searches for, or a "
	    "path). COLL_NCCL_LIB, its older name, is still read when it is unset.", ENV_CORE },
	{ "COLL_CUDA_P2P", "1", "0: collcheck --engine cuda stages through pinned host memory "
	    "and coll over TCP even where every rank is on one host (to test that path).",
	    ENV_CORE },
	{ "COLL_CUDA_BLOCKS", "64", "The most thread blocks a kernel of --engine cuda launches "
	    "(1 to 128).", ENV_CORE },
	{ "COLL_CUDA_THREADS", "512", "Threads per block of --engine cuda's kernels (64 to "
	    "1024).", ENV_CORE },
	{ "COLL_CUDA_SYNC", "gpu", "comm: --engine cuda synchronises its ranks around each op "
	    "with barriers through the communicator instead of in its kernels (to compare).",
	    ENV_CORE },
	{ "COLL_CUDA_COPY", "auto", "push or pull: how --engine cuda's all-gather, all-to-all and "
	    "small broadcasts copy between GPUs of one host (auto: writes into peers for "
	    "all-gather and all-to-all, reads from the root for broadcast). Any "
	    "other value stops --engine cuda, on either path.", ENV_CORE },
	{ "COLL_CUDA_ROOTED", "auto", "spread or direct: --engine cuda's broadcast and reduce "
	    "among 3 or more GPUs of one host; spread keeps the root's link to the bytes once "
	    "(a broadcast pipelined through the other ranks, from 4 MiB under auto), direct has "
	    "every rank read the root's input (broadcast) and gives the root a slice (reduce). Any "
	    "other value stops --engine cuda, on either path.",
	    ENV_CORE },
	{ "COLL_CUDA_CHUNK", "8388608", "Bytes of each pinned slot the staged path of "
	    "--engine cuda copies through (4096 or more).", ENV_CORE },
	{ "NCCL_CONF_FILE", NULL, "Read by collcheck as NCCL reads it: the user's NCCL "
	    "configuration file instead of ~/.nccl.conf.", ENV_CORE },
	{ "NO_COLOR", NULL, "Set and not empty: collcheck prints no colours (as --no-color).",
	    ENV_FRONT },
	{ "SLURM_JOB_NODELIST", NULL, "Inside a Slurm allocation and without -H or --hostfile, "
	    "the hosts to run on (with SLURM_TASKS_PER_NODE for their slots).", ENV_FRONT },
	{ "SLURM_JOB_ID", NULL, "With --launcher slurm, the job scancel stops when collrun ends "
	    "the job early; without it, the step is named coll-JOB and cancelled by name.",
	    ENV_FRONT },
	{ "SSH_AUTH_SOCK", NULL, "The ssh-agent tried first for SSH authentication, before the "
	    "key files.", ENV_FRONT },
	{ "HOME", NULL, "Where ~/.ssh/config, ~/.ssh/known_hosts and the key files are.",
	    ENV_FRONT },
	{ "PATH", "/usr/local/bin:/usr/bin:/bin", "Where a local job's PROGRAM is looked for "
	    "when it is not a path.", ENV_FRONT },
	{ NULL, NULL, NULL, 0 },
};

const char *
envvar_group_title(unsigned flag)
{
	switch (flag) {
	case ENV_RANK: return "Set by collrun for every rank";
	case ENV_CORE: return "Read by libcoll in every rank";
	case ENV_FRONT: return "Read by the front end";
	}
	return "";
}
