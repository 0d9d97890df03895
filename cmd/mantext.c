/*
 * The man pages' prose, one entry per page: what the option tables cannot
 * say (what a tool is for, its exit codes, examples, files). Plain text:
 * coll-gendoc escapes it for roff, so write no roff requests here.
 */
#include <stddef.h>
#include <string.h>

#include "doc.h"

static const char *const collrun_description[] = {
	"collrun starts N ranks of PROGRAM, on this machine, over SSH on many hosts, or "
	"through Slurm's srun, and gives each the unique id of a new job to rendezvous with "
	"(COLL_UNIQUE_ID) and its place in the job (COLL_RANK, COLL_SIZE and torchrun's RANK, "
	"WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; see ENVIRONMENT). It streams the "
	"ranks' output, forwards signals, and fails fast unless told to keep going. On a "
	"terminal each line is labelled with its rank (and host); to a pipe or a file the "
	"output is the program's own, so one JSON document stays one, as with mpirun: "
	"--label (or mpirun's --tag-output) labels always, --no-label never.",
	"mpirun's spellings work too: -np N, -hostfile FILE, -oversubscribe and any long "
	"option with one dash, --host for --hosts, -npernode for -N, and -x VAR[=VALUE], which "
	"gives every rank "
	"the variable (VAR alone: its value here). What a remote rank's environment holds: "
	"the variables above, the -x ones, and PATH and LD_LIBRARY_PATH with the "
	"installation's bin and lib first (see --prefix); the rest is what its host gives a "
	"command over SSH (the login's), or what srun passes on (by default all of "
	"collrun's). -x values travel on the agent's standard input, never on a command line "
	"there (ps); -x VAR=VALUE is on collrun's own here, so give a secret as -x VAR.",
	"Options end at the program name, as with mpirun and srun, so the program's own flags "
	"need no --. Hosts come from -H (pdsh ranges such as node[01-16] or n[1-3,7], each with "
	"an optional :slots), else --hostfile (Open MPI's 'host slots=N' lines), else a Slurm "
	"allocation's SLURM_JOB_NODELIST, less the hosts of --exclude. Without hosts every "
	"rank runs here, as many as -n asks. Ranks fill each host's slots in turn (--place "
	"block) or go round the hosts (--place roundrobin); -N overrides the slots. More ranks "
	"than slots are refused, as by mpirun, unless --oversubscribe deals the rest over the "
	"hosts again. Past 4 ranks per CPU of this machine collrun warns that they will take "
	"turns; a start that takes longer than 2 s says how far it is, and a signal stops it.",
	"The launcher is local when every host is this machine and SSH otherwise; --launcher "
	"slurm runs the ranks through srun. SSH sessions run on libssh2, all of them "
	"non-blocking in one loop (--fanout at once). Host keys are checked against OpenSSH's "
	"known_hosts files: unknown or changed keys are refused, and --accept-new adds unknown "
	"ones. Authentication tries ssh-agent, then the key files. User, HostName, Port, "
	"IdentityFile, UserKnownHostsFile, StrictHostKeyChecking and ConnectTimeout are read "
	"from ~/.ssh/config (or -F). Each remote rank runs under collrun --agent in its own "
	"process group and dies with it if collrun's connection drops. The agent owns the "
	"program's output and reports to collrun in framed records, so nothing a program "
	"prints can pass for the agent's word, and it signals nothing but the program's own "
	"process group.",
	"Started by a path (/opt/coll/bin/collrun) or given --prefix DIR, collrun runs the "
	"agent from that installation on every host and puts its bin and lib first in the "
	"ranks' PATH and LD_LIBRARY_PATH, as Open MPI's --prefix does, so a tool of the suite "
	"named bare (collcheck) is found wherever the same files are.",
	"When a rank fails, collrun names it and how it ended, stops the others after --grace "
	"seconds and exits with that rank's code: ranks waiting on a dead one in a collective "
	"could only hang. With -k (--keep-going) it still names the failed rank at once, but "
	"lets the others run to their own end, for ranks that can go on without it; it then "
	"exits with the first failed rank's code (or 128+N for signal N) as above, or 255 if a "
	"host could not be used. A signal to collrun and --timeout still stop every rank; a "
	"signal is passed on to the ranks (a second one kills them), and their ends are said in "
	"one line. A reader of collrun's output that goes away (| head) ends the job quietly "
	"with 141, as a shell shows a death by SIGPIPE.",
	NULL,
};

static const struct mantext_item collrun_exit[] = {
	{ "0", "Every rank exited 0." },
	{ "2", "Usage error: a bad option or value, an empty program name or a directory." },
	{ "3", "collrun could not run the job (no such program, no usable interface, no room "
	    "for its output)." },
	{ "124", "The job ran past --timeout." },
	{ "130, 143", "Stopped by SIGINT (Ctrl-C) or SIGTERM, when the ranks' codes say no "
	    "other failure." },
	{ "141", "The reader of collrun's output went away." },
	{ "255", "Some hosts could not be used; they are listed at the end with the reason." },
	{ "other", "The code the first failed rank exited with, or 128+N if signal N killed it "
	    "(with --keep-going too, once every rank has ended)." },
	{ NULL, NULL },
};

static const struct mantext_item collrun_examples[] = {
	{ "collrun -n 8 collcheck allreduce -b 8 -e 64M -f 4 -c 1",
	    "Eight local ranks of the all-reduce sweep." },
	{ "collrun -H 'node[01-16]' -N 8 collcheck allreduce",
	    "128 ranks over SSH, 8 on each of 16 hosts." },
	{ "collrun -H 'node[01-04]' -g uname -r",
	    "Run a command on four hosts and print identical output once." },
	{ "collrun --launcher slurm -n 64 collcheck allreduce",
	    "64 ranks through srun, inside an allocation." },
	{ "collrun --hostfile hosts --exclude node03 -T 600 ./train",
	    "The hosts of a file but node03, stopping the job after ten minutes." },
	{ "collrun -np 16 -hostfile hosts -x NCCL_DEBUG=INFO -x PATH ./train",
	    "mpirun's spellings: two variables for every rank, PATH with its value here." },
	{ "collrun -H 'node[01-64]' -k ./fsck-local-disk",
	    "A check on every host, to its end on each even where some fail." },
	{ NULL, NULL },
};

static const struct mantext_item collrun_files[] = {
	{ "~/.ssh/config", "SSH client configuration (see -F)." },
	{ "~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts", "Host keys the SSH hosts must match; "
	    "--accept-new adds to the first." },
	{ "~/.ssh/id_ed25519, ~/.ssh/id_ecdsa", "Keys tried after ssh-agent." },
	{ "$COLL_JOB_DIR/JOB.json", "The record of a running job (default directory "
	    "/tmp/coll-UID/jobs)." },
	{ "$COLL_STATUS_DIR/coll.JOB.COMM.RANK", "Each rank's status page (default directory "
	    "/dev/shm)." },
	{ NULL, NULL },
};

static const char *const collcheck_description[] = {
	"collcheck checks the communication of a cluster with the coll core. Each command "
	"runs as the ranks of a job: under collrun every process is a rank (COLL_UNIQUE_ID is "
	"set), and run alone it becomes the front end and starts its own workers, one per host "
	"(-N per host) of -H, --hostfile or the Slurm allocation, over SSH or srun, or -N local "
	"ranks when no host is given.",
	"collcheck alone (or collcheck all) runs env, then links, then a short all-reduce sweep "
	"(8 B to 2 MiB). collcheck env gathers every host's facts in one round through the "
	"core: host name, kernel, OS, CPUs, memory, NUMA nodes, limits (memlock, nofile, "
	"stack), /dev/shm, hugepages, kernel modules (nvidia, nvidia_peermem, nv_peer_mem), the "
	"IOMMU, the NVIDIA driver, CUDA driver and runtime, NCCL (ncclGetVersion and the file "
	"the loader found), every GPU through NVML (model, PCIe generation and width against "
	"their maximum, ECC and its uncorrected errors, remapped rows, clock event reasons, "
	"persistence, NVLink), PCIe links and ACS above GPUs and NICs, RDMA ports (state, "
	"physical state, rate, link layer, GID, firmware, MTU), network interfaces, the "
	"NCCL_*, CUDA_*, UCX_*, OMPI_* and TORCH_* variables and nccl.conf, and each host's "
	"clock against rank 0's. What is absent says so: skipped, and why.",
	"The analysis compares every fact across hosts and names the hosts that differ from "
	"the majority (with no majority, every host with its value), then applies rules for "
	"known pitfalls: an NVIDIA driver, CUDA or NCCL version or GPU count that differs, or "
	"an NCCL_* variable, is an error; an RDMA port not ACTIVE is an error, one slower than "
	"the fastest is a warning; NCCL_IB_HCA entries without = match by prefix (mlx5_1 takes "
	"mlx5_10 too); memlock below unlimited where RDMA ports are; a PCIe link narrower than "
	"its maximum; ACS redirecting on a bridge above a GPU or NIC; uncorrected ECC errors "
	"or pending row remaps; clocks held back; a clock further off than clock_offset_ms. "
	"--save-baseline FILE keeps the facts the hosts agree on, and --baseline FILE compares "
	"every host with them later, as nhc-genconf and NHC do. --config FILE sets thresholds "
	"and severities (see the --config option).",
	"collcheck env also reads each host's kernel log (/dev/kmsg, since boot or --since "
	"TIME; reading it needs root or CAP_SYSLOG, else it says so as info; tests give a file "
	"in COLL_KMSG_FILE) for NVIDIA Xid and SXid events, judged by NVIDIA's Xid catalog (79 "
	"fallen off the bus, 48/64/95 memory and 74 NVLink are errors), PCIe AER errors and NIC "
	"link flaps, resets and transmit timeouts, and its error counters (PCIe AER from sysfs, "
	"RDMA link_downed, symbol errors and congestion counters, GID tables, the NICs' pause, "
	"PFC, ECN and CNP statistics as ethtool -S shows them, NVLink's state and error counters "
	"through NVML), which a --baseline compares with the same host's: pause frames that grew "
	"are info (flow control at work), a pause storm (1000 frames a second or a tenth of the "
	"time paused since the baseline, or the NIC's storm guard acting) a warning; NVLink "
	"replays or recoveries that grew a warning, a link down that was up an error.",
	"collcheck health checks this host alone, for Slurm's HealthCheckProgram, a prolog or an "
	"epilog: no communicator and nothing on the network; the kernel log, the error counters "
	"(against --baseline), the GPUs, PCIe links and RDMA ports, judged by the same rules. It "
	"prints one line per finding and one that sums up, and exits 1 on an ERROR only: a "
	"warning exits 0, since a prolog's non-zero exit drains the node. --drain (here and in "
	"the whole check, env and links) drains each host with an ERROR finding through "
	"scontrol update State=DRAIN, with the first finding, cut to 120 bytes and cleaned, as "
	"its Reason (\"collcheck: Xid 79 on GPU 3 (0000:3b:00), 1 time\"); a host with "
	"warnings only, one that could not be reached, or one whose error every host shares "
	"(no majority) is never drained. The node is SLURMD_NODENAME, else the host name, "
	"under health, and the name it was reached by otherwise; scontrol's failure exits 3. "
	"tools/collcheck-health is the HealthCheckProgram (which takes no arguments); "
	"docs/SLURM.md has the slurm.conf lines.",
	"collcheck links measures every pair of hosts (ranks, with -N) in the n-1 rounds of a "
	"round-robin tournament, all pairs of a round at once: latency (half a round trip of 8 "
	"bytes) and bandwidth (-s bytes both ways at once), each the median of its iterations. "
	"Pairs below link_bw_factor (0.5) times the upper quartile of bandwidth or above "
	"link_lat_factor (3) times the lower quartile of latency are named (quartiles, not "
	"medians: one slow host of three makes most pairs slow), and so is a host most of whose "
	"pairs are slow. The matrix is printed as numbers (as shades past 32 ranks), slow pairs in red "
	"on a terminal.",
	"The report is one line per host: its worst severity (OK, INFO, WARN, ERROR, "
	"UNREACHABLE) and what is wrong; -v adds every fact, identical values once and "
	"differing ones with the hosts that hold them; --json writes hosts, facts, findings, "
	"the link matrices, the sweep and rank 0's phase times. A host that cannot be used "
	"(unreachable, refused, or its worker cannot be started) is named with why, and the "
	"others are checked without it. --prometheus FILE also writes the outcome for "
	"node_exporter's textfile collector (coll_check_success, coll_check_findings by "
	"severity, one coll_check_finding per host, check and severity, "
	"coll_check_last_run_timestamp_seconds; label mode: all, env or links), to a new file "
	"beside FILE renamed over it, so the collector never reads half of one.",
	"collcheck gpus measures, on each host (its first worker), every GPU's copies to and "
	"from pinned host memory and a copy from every GPU to every other (the copy engines, "
	"peer access where the pair has it, as nvbandwidth's memcpy tests; not NCCL), -s bytes "
	"(256M) each, --iters (5) after a warm-up, each bounded by a deadline so that a stuck "
	"GPU is an error, not a hang; GPUs in nvidia-smi's order. A copy below its GPU model's "
	"floor (a table in coll, overridden by 'gpu_floor MODEL_PATTERN = H2D D2H P2P' lines in "
	"--config) is an error, one below gpu_bw_factor (0.7) times the host's upper quartile "
	"of its kind a warning, naming the GPU or pair; a GPU most of whose pairs are slow is "
	"named itself. A model without floors is judged against its peers only, said once. "
	"Each host's matrix is printed (with several hosts, those with findings; -v all) and "
	"--json has them under \"gpus\". It is not part of the whole check: it takes every "
	"GPU for seconds. A host without a GPU or driver says so as info. Floors hold for "
	"copies of 64 MiB and more (smaller ones are judged against their peers only), and a "
	"GPU that another process used while it was measured (NVML) has its failures and "
	"floors as warnings, not errors, so that --drain never drains for another's load.",
	"collcheck allreduce is nccl-tests' all-reduce sweep: for each size it reports time, "
	"algorithm and bus bandwidth, the number of wrong results, and the slowest rank. Its "
	"flags follow all_reduce_perf, except that -N is the rank count, since nccl-tests "
	"gives -n to iterations. collcheck allgather, reducescatter, broadcast, reduce and "
	"alltoall are the other sweeps of nccl-tests, with its sizes (the larger buffer; each "
	"rank's part rounded down to 16 bytes), its bus-bandwidth factors and its in-place "
	"layout; -r sets the root of broadcast and reduce.",
	"--engine says who runs the collectives. nccl: NCCL on the GPUs, one per rank by its "
	"index on its host; libnccl.so.2 (or COLL_NCCL_LIBRARY) and the CUDA driver are loaded at "
	"run time and the header names each rank's GPU and NCCL's version and path. The NCCL "
	"unique id travels through coll's communicator, NCCL is initialised non-blocking and "
	"every wait has the -T deadline, after which the NCCL communicator is aborted and the "
	"rank exits 3 saying so. cuda: coll's own CUDA kernels on the GPUs, without NCCL: "
	"ranks of one host map each other's buffers (CUDA IPC, peer access over NVLink or "
	"PCIe) and reduce and copy across them, synchronised by flags in GPU memory; ranks on "
	"several hosts (or with COLL_CUDA_P2P=0) copy through pinned host memory and run coll's "
	"own collectives over TCP, in chunks that overlap the copies; the header names each "
	"rank's GPU and path (ipc or staged). Built without the CUDA toolkit, or where a rank "
	"has no GPU, it exits 3 saying why. coll: coll's own collectives over TCP in host "
	"memory. auto, "
	"the default: NCCL where every rank can have it, else coll, with the reason in the "
	"header. Checks, barriers and timings travel through coll's communicator whichever "
	"engine runs the collectives.",
	"When a rank dies, collcheck allreduce stops by default: every other rank exits 3 "
	"with an error that names the dead rank. With --on-failure shrink the survivors go "
	"on instead: they shrink the job to themselves (the root service agrees on who is "
	"gone), rank 0 prints one line saying which ranks left (numbered as at the start), "
	"where and why, and the size that was cut off is measured again (its row shows twice "
	"when rank 0 had finished it before the others were cut off); later rows are of the "
	"smaller job, busbw included. With --json the departures are listed under \"events\". "
	"Any other failure (a hung rank, a lost root service, a shrink that fails) still stops "
	"the sweep. Under collrun, give it -k (--keep-going) so that collrun lets the "
	"survivors run; collcheck run alone does that by itself. Rehearse it with COLL_FAULT "
	"(see coll(7)).",
	"An op whose link broke while both ends lived is run again by the core (COLL_RETRY_MAX), "
	"so its results come out right; the sweeps, links and the whole check still report "
	"each such op, once per link, as an error that names it and its two ranks and hosts "
	"(\"retried: allreduce seq 40 between rank 1 (node01) and rank 2 (node02), 1 time\"), "
	"and exit 1: the NIC, cable or switch port between them wants looking at. The sweeps "
	"print it after the table as a comment line (on stderr with --json); --json lists them "
	"under \"retries\" (seq, op, ranks, hosts, count).",
	"collcheck --help lists the commands and collcheck --version prints the version.",
	NULL,
};

static const struct mantext_item collcheck_exit[] = {
	{ "0", "All is well: every result was right, no host differs, no rule fired above info." },
	{ "1", "Problems were found: wrong results, an op retried after a broken link, a host "
	    "that differs or cannot be reached, a warning or an error (collcheck health: an "
	    "error only)." },
	{ "2", "Usage error: a bad command, option or value." },
	{ "3", "collcheck could not run (a rank could not join, a rank died, a timeout), or "
	    "--drain could not drain a host." },
	{ NULL, NULL },
};

static const struct mantext_item collcheck_examples[] = {
	{ "collcheck -H 'node[01-16]'", "The whole check of 16 hosts over SSH." },
	{ "collcheck env --hostfile hosts -v", "Every fact of every host, grouped by value." },
	{ "collcheck health --drain", "This node alone, as a Slurm prolog: drained on an "
	    "ERROR finding, with the finding as the reason." },
	{ "collcheck env -H 'node[01-16]' --save-baseline good.json", "Keep what 16 good "
	    "hosts agree on ..." },
	{ "collcheck env -H 'node[17-64]' --baseline good.json", "... and hold others to it." },
	{ "collcheck links -H 'node[01-08]' -s 16M", "Every pair of 8 hosts, 16 MiB each way." },
	{ "collcheck gpus -H 'node[01-08]'", "Every GPU and GPU pair of 8 hosts, named where "
	    "slow." },
	{ "collcheck -H 'node[01-16]' --prometheus /var/lib/node_exporter/textfile/coll.prom",
	    "The findings for node_exporter's textfile collector (from cron)." },
	{ "collcheck allreduce -N 4 -d all -o all -e 1M",
	    "Four local ranks, every datatype and operation, up to 1 MiB." },
	{ "collcheck allreduce -N 4 --json > result.json", "The results as JSON, for scripts." },
	{ "COLL_FAULT=3@300:kill collrun -n 8 -k collcheck allreduce --on-failure shrink "
	    "-e 1M -f 4", "Rank 3 dies at its 300th collective; the other seven finish the "
	    "sweep." },
	{ "collrun -H 'node[01-16]' -N 8 collcheck allreduce", "128 ranks over SSH." },
	{ NULL, NULL },
};

static const struct mantext_item collcheck_files[] = {
	{ "$COLL_STATUS_DIR/coll.JOB.COMM.RANK", "Each rank's status page (default directory "
	    "/dev/shm)." },
	{ NULL, NULL },
};

static const char *const collstack_description[] = {
	"collstack takes every thread's stack of every rank of a running job, on every host, "
	"merges them into one tree labelled by rank sets ([0-3,5-1247]) in the manner of LLNL "
	"STAT, reads each rank's collective sequence numbers from its status pages, and names "
	"first the rank(s) the others wait for: behind in sequence, outside any collective, "
	"stopped, a zombie, gone or missing.",
	"Without a selection it takes the stalled job on this host: among this user's jobs "
	"with processes here (collrun's job records, Slurm jobs, the launcher process trees "
	"of torchrun, mpirun and the like, status pages), the one whose collectives have not "
	"moved for 2 s, named with how it was found; several are listed with the flag that "
	"picks each (exit 2), never chosen silently. A collrun job is read on its hosts; "
	"--job names another. --pid and --match select "
	"processes not started by collrun, on this host or on the hosts of -H, --hostfile or "
	"a Slurm allocation; the pid of a launcher (or of a process that carries no rank "
	"while processes under it do) means its job. --slurm JOBID selects the tasks of a running Slurm job from "
	"wherever squeue works: squeue names its nodes, and the workers run there as a step "
	"of that job (srun --jobid --overlap, so they need no free CPU in it); an interrupt "
	"ends that step alone, never the job. A process's rank comes from COLL_RANK, RANK "
	"(torchrun, DeepSpeed), OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, "
	"MV2_COMM_WORLD_RANK or SLURM_PROCID in its environment, in that order; launchers and "
	"agents (torchrun, mpirun, orted, prted, hydra, srun, slurmstepd, deepspeed, "
	"accelerate launch, collrun) are shown once as the job's launcher, never taken as "
	"ranks. When the processes do not all carry a distinct rank they are numbered by "
	"host and pid instead, and the output says why.",
	"Only processes that speak for the job are read (the evidence rule of coll(7)'s "
	"docs/SECURITY.md): they must belong to the job's owner, the user running collstack "
	"or the one root names with --user, by real and effective uid alike, and a --job's "
	"must descend from its collrun or collcheck (or Slurm's slurmstepd), a --slurm job's "
	"from that job's slurmstepd. Anything else that claims the job, or matches --match, "
	"is listed as ignored: with its pid and user and never reaches the verdict. So is a "
	"status page, flight recorder dump or pipe, or NCCL RAS listener that is not the "
	"rank's user's own.",
	"One worker per host takes the stacks of its processes in parallel. Each process is "
	"paused once, all threads together (ptrace PTRACE_SEIZE and PTRACE_INTERRUPT), for as "
	"long as it takes to copy each thread's registers and live stack, then resumed; the "
	"stacks are unwound from the copies with elfutils' libdwfl and named with file:line "
	"where debug information exists (inlined functions as frames of their own), the "
	"symbol where only a symbol table does, module+offset where neither. A process that "
	"was stopped stays stopped; if collstack is killed, the kernel resumes the job. Names "
	"are cached per host across processes. The workers merge their trees through the "
	"core's collectives, a binomial tree of merges, so the front end receives one tree.",
	"In a CPython 3.11, 3.12 or 3.13 process each thread's Python functions are read too, "
	"from its memory during the same pause (nothing runs in it; 3.13's own "
	"_Py_DebugOffsets say where its fields are), and take the place of the evaluation-"
	"loop frames that run them: Python and native frames interleave, each Python one as "
	"function (file:line). A rank's place in the verdict is its main thread's innermost "
	"Python function of the user's own (not of the standard library or site-packages). "
	"An older or unknown interpreter is said in a note, and its native frames are shown.",
	"The tree indents only where stacks part; each branch starts with its rank set and "
	"count, the largest first. A thread in a system call ends in a [kernel] frame naming "
	"the call and the kernel function it sleeps in. The equivalence classes below it "
	"group the ranks whose stacks are all the same. --json, --dot and --svg give the "
	"same for scripts and for Graphviz.",
	"--fr reads PyTorch's flight recorder instead, offline: the dumps its NCCL process "
	"groups write (TORCH_FR_DUMP_TEMP_FILE, one per rank, named PREFIX<rank>), given as "
	"files, a directory or the prefix. Each is a pickle or JSON (dump_fr_trace_json, "
	"which has no frames), told by its first byte; collstack reads plain data only "
	"(no class is named, nothing runs) within limits on size, values and nesting. The "
	"report begins with the dumps' format and, from format 2.10, the communication "
	"library's version (ranks on different versions are a finding); a format newer than "
	"2.10 is read by its keys, with a note. Entries are "
	"matched per process group by collective_seq_id: it names the ranks that did not "
	"join the newest collective, with the op each was last in, the thread that made it "
	"(format 2.10) and the Python frames it "
	"came from, ranks of the group with no dump, and the first sequence number where two "
	"ranks disagree on the op, its sizes or its dtypes.",
	"NCCL jobs (PyTorch's among them) are read from more sources. Loaded into each rank "
	"with NCCL_PROFILER_PLUGIN=coll (or the library's path), coll's profiler plugin "
	"libnccl-profiler-coll.so (NCCL 2.26 to 2.28) publishes a status page per NCCL "
	"communicator: the collectives enqueued, and those whose GPU kernel began and ended; "
	"a rank that has not enqueued the op the others run is behind, a rank whose kernel "
	"has not begun while the others' have is named (its stream is busy), every kernel "
	"begun and none ended is a hang inside the collective with no rank late, and ranks "
	"that disagree on an op's kind, size or type are a desync, the fewer named. A rank "
	"behind in one communicator because it waits in another's op is a link of a chain, "
	"said in one line down to its cause, not blamed. Where a process maps "
	"libnccl, each worker asks NCCL's RAS service (NCCL_RAS_ADDR, default "
	"localhost:28028) for its report: per-rank collective counts, missing ranks, "
	"async errors. A rank whose environment sets TORCH_FR_DEBUG_INFO_PIPE_FILE (or the "
	"older TORCH_NCCL_DEBUG_INFO_PIPE_FILE; likewise TORCH_FR_DUMP_TEMP_FILE and "
	"TORCH_FR_BUFFER_SIZE before TORCH_NCCL_DEBUG_INFO_TEMP_FILE and "
	"TORCH_NCCL_TRACE_BUFFER_SIZE, as PyTorch reads them) is "
	"asked for a flight recorder dump through its pipe (--no-fr-dump leaves it alone); "
	"the dumps are matched across ranks as --fr does. The verdict's first line names "
	"each culprit with the sources that agree (status pages, the plugin, RAS, the flight "
	"recorder, and the stacks: its main thread outside any collective or device wait "
	"while every other rank's is in one), followed by its main thread's stack, Python and "
	"native, innermost first. The plugin and RAS both count the collectives a rank "
	"enqueued, from one counter inside NCCL, and reach collstack by different ways (a "
	"page, the RAS network): they agree unless one of them is broken.",
	"--cuda lists the GPU kernels each process runs, through cuda-gdb in batch mode "
	"($COLL_CUDA_GDB, cuda-gdb on PATH, or /usr/local/cuda/bin/cuda-gdb), after the "
	"snapshot, up to 8 processes of a host at once (cuda-gdb 12 and later take no lock "
	"file). An attach costs about 10 s (4 ranks on 4 H200s took 12.6 s in all), within "
	"-T/4; where not all fit, the suspects go first and the rest are said. A process a "
	"debugger left stopped is continued. Attaching wakes threads that wait: a "
	"PyTorch rank's idle OpenBLAS workers exit.",
	"ptrace must be allowed: run as the job's user (or root); a refusal is explained "
	"(Yama ptrace_scope, another user's process, a debugger already attached, a container "
	"without CAP_SYS_PTRACE).",
	NULL,
};

static const struct mantext_item collstack_exit[] = {
	{ "0", "The job advances: every rank was read and none holds the others up." },
	{ "1", "A hang: a culprit is named (behind, stopped, dead, missing, its GPU not "
	    "started, a desync), or the job has stopped with no rank late (inside a "
	    "collective, or outside any for 10 s)." },
	{ "2", "Usage error: a bad option or value; or, with nothing named, several stalled "
	    "jobs here (each listed with the flag that picks it)." },
	{ "3", "The ranks could not be read (no such job, a host unreachable, a worker failed)." },
	{ NULL, NULL },
};

static const struct mantext_item collstack_examples[] = {
	{ "collstack", "The stalled job on this host, whoever launched it." },
	{ "collstack --match 'python.*train.py' -H 'node[01-16]'", "Every training process "
	    "on 16 hosts." },
	{ "collstack --pid 4242,4243 --json", "Two processes here, as JSON." },
	{ "collstack --slurm 81234", "Every task of Slurm job 81234, from a login node." },
	{ "collstack --fr /tmp/nccl_trace_rank_", "Which rank the others waited for, from "
	    "PyTorch's flight recorder dumps." },
	{ "collstack --svg > hang.svg", "The merged tree drawn by Graphviz." },
	{ "NCCL_PROFILER_PLUGIN=coll collrun -n 8 python3 train.py", "A PyTorch job whose "
	    "NCCL communicators publish status pages for collstack and colltop." },
	{ "collstack --cuda", "The stalled job, with each rank's GPU kernels." },
	{ NULL, NULL },
};

static const char *const colltop_description[] = {
	"colltop is a live dashboard of a cluster's collectives, kept open beside a running "
	"job. It starts one worker per host (over SSH with -H or --hostfile, through srun in a "
	"Slurm allocation, or --np N here, 2 by default), joined in one communicator. Every "
	"interval (-d in tenths of a second as htop's, or --interval in seconds; 1 s by "
	"default; + and - change it live) each worker runs a small "
	"all-reduce probe (--bytes, 64K by default, --probe-iters times: 128 KiB a second per "
	"rank, far under 1% of any data-centre link), samples its host, and gathers its "
	"snapshot to rank 0, which hands the dashboard one frame.",
	"Per rank it shows the probe's latency with its history as a sparkline, the bus "
	"bandwidth the probe reached (nccl-tests' busbw), and LATE_MS: how late the rank came "
	"to the probe against the moment every rank meant to start it. In an all-reduce every "
	"rank waits for the last to arrive, so the rank that holds the others up has the "
	"shortest op of all; lateness, not latency, names it. A straggler comes later than "
	"--straggler-factor times the median lateness, and by at least --straggler-ms, for "
	"--straggler-intervals intervals in a row, once --warmup intervals have passed; the "
	"slowest is named on the alert line.",
	"Per host (t toggles) it shows every network interface's receive and transmit rates, "
	"error rate and carrier changes; every RDMA port's data rates (its counters count "
	"4-byte words), symbol errors, link downs, receive errors and retransmissions "
	"(hw_counters/local_ack_timeout_err); and every GPU's utilisation, memory, power, "
	"temperature and clock event reasons, through NVML loaded at run time (no NVIDIA "
	"driver: the GPU columns are empty and the JSON says why).",
	"It also reads, passively, the status pages of the other jobs on the hosts (coll's "
	"core, and NCCL communicators with coll's profiler plugin). A job whose sequence "
	"numbers stay still for --stall seconds while a rank is inside an op turns red, with "
	"the rank behind: the one whose last op is the oldest, else the one whose process is "
	"stopped or dead, else the one most of the others wait on. The c key runs collstack "
	"on it. A job none of whose processes is running any more (killed, its pages left "
	"behind) is shown gone, its ranks not counted as live: a page counts only while its pid "
	"is a live process of the page's owner that started before the page's last write.",
	"A job's own straggler is named from the times its pages keep of its last ops (page "
	"version 5): each op seen ended on two or more of its ranks, on any host, is compared "
	"across them, a rank's wait being the op's end less its begin on its own clock (so "
	"hosts' clocks need not agree), and its lateness the others' median wait less its own. "
	"Over each interval's new ops, the rank late by the probe's rule (above) is named per "
	"job and communicator with its host, on the alert line and in --json. Retries of its "
	"ops after a broken link are counted per job and rank, the link named by both its ranks "
	"and hosts where the pages say.",
	"A host that stops answering is named lost as soon as the core's keep-alive gives its "
	"verdict (--dead-after, 1.5 intervals by default, at least 1 s; COLL_KEEPALIVE_MS and "
	"COLL_KEEPALIVE_LIMIT, when set, win), and the other workers shrink their "
	"communicator and go on; until the verdict the alert line says how long the workers "
	"have been silent. If rank 0's host is lost, the next rank takes its place.",
	"Keys, as htop's: q or F10 quits (Ctrl-C too, exit 130); h, ? or F1 help; t ranks or "
	"hosts; F6 picks the sort column from a list, < and > step through them; I or r "
	"inverts the sort; \\ or / filters (Enter keeps, Esc clears); p or space pauses the "
	"screen (the workers go on); + and - change the interval; c runs collstack on a "
	"stalled job; Left and Right scroll the columns after the first; Up, Down and the page "
	"keys scroll the rows. A terminal under 60x10 is told so. NO_COLOR or --no-color turn "
	"colours off; sparklines are ASCII outside UTF-8 locales or with --ascii.",
	"Batch mode (-b as top's, -n N intervals, --once, --json, or an output that is not a "
	"terminal) prints "
	"each interval's summary, alerts and both tables as text, or with --json one object "
	"per line holding every number shown and each counter's total.",
	"--listen [ADDR:]PORT serves the same numbers to Prometheus at /metrics (the text "
	"format, version 0.0.4; the current values at each scrape) in every mode, the screen, "
	"-b and --json alike, so a headless node can run colltop -b --listen 9464 for its "
	"dashboards. PORT alone listens on every address, as exporters do; 127.0.0.1:PORT or "
	"[::1]:PORT on loopback only; port 0 picks a free one, said on standard error. "
	"Series: coll_probe_* per rank (host, rank), the hosts' NIC, RDMA and GPU counters "
	"(host with device, port or gpu, as node_exporter and dcgm-exporter name them), "
	"coll_job_* per watched job (job, comm) and rank, colltop's own coll_top_*; "
	"docs/PROMETHEUS.md lists them. The server runs on a thread of its own and never "
	"waits on a client: a header is at most 8 KiB and must come within 5 s, at most 64 "
	"connections are kept (a newcomer cuts off an idle reader, never one being answered). A port that cannot be had "
	"is said before the workers start (exit 3).",
	"--ras follows NCCL RAS's MONITOR stream (NCCL 2.29 and later; NCCL_RAS_ADDR, else "
	"localhost:28028) on the front end's host, which must be a host of the job: a process "
	"of the job that RAS declares dead is an alert the moment RAS knows it, other events "
	"are shown dim. It speaks only to a listening socket held by a process of a watched "
	"NCCL job's rank on that host, and waits for one, and tries again after the stream "
	"ends, every 5 s. Each event names the job and user whose rank serves the stream; a "
	"death is an alert only for a process colltop sees as a rank of that job.",
	NULL,
};

static const struct mantext_item colltop_exit[] = {
	{ "0", "It ran to its end (q, or the intervals asked for)." },
	{ "1", "It ran, but a worker or host was lost on the way." },
	{ "2", "Usage error: a bad option or value." },
	{ "3", "The workers could not be started or sent nothing, or standard output failed." },
	{ "130", "Ctrl-C." },
	{ "141", "The reader of standard output went away (colltop -b | head)." },
	{ NULL, NULL },
};

static const struct mantext_item colltop_examples[] = {
	{ "colltop", "Two workers on this machine: its interfaces, RDMA ports and GPUs." },
	{ "colltop -H 'node[01-64]'", "One worker on each of 64 hosts over SSH." },
	{ "colltop --once --json | jq .straggler", "One interval, for a script." },
	{ "colltop -d 5 --bytes 1M --probe-iters 4", "A heavier probe twice a second." },
	{ "colltop -b -H 'node[01-64]' --listen 9464 > /dev/null", "Headless, for "
	    "Prometheus to scrape at :9464/metrics." },
	{ NULL, NULL },
};

static const char *const coll_description[] = {
	"The coll tools and programs built on libcoll take their settings and their place in "
	"a job from the environment. collrun sets the first group for every rank it starts; "
	"libcoll reads the second in every rank; the front end (collrun, or collcheck run "
	"alone) reads the third.",
	"A program joins the job collrun started with comm_init_env(), which reads "
	"COLL_UNIQUE_ID, COLL_RANK and COLL_SIZE. It builds against the installed library with "
	"pkg-config --cflags --libs coll.",
	NULL,
};

static const struct mantext_item coll_examples[] = {
	{ "COLL_DEBUG=INFO collrun -n 2 ./prog", "Log what each rank does to standard error." },
	{ "COLL_SOCKET_IFNAME=^docker,lo collrun -H 'node[01-04]' ./prog",
	    "Keep off the docker and loopback interfaces." },
	{ "cc prog.c $(pkg-config --cflags --libs coll)", "Build a program against libcoll." },
	{ NULL, NULL },
};

static const struct mantext mantext_table[] = {
	{ "collrun", 1, "start ranks of a program here, over SSH or through Slurm",
	    collrun_description, ENV_RANK | ENV_CORE | ENV_FRONT, collrun_exit, collrun_examples,
	    collrun_files, "collcheck(1), coll(7), ssh_config(5), srun(1)" },
	{ "collcheck", 1, "check the collectives of a cluster", collcheck_description,
	    ENV_CORE | ENV_FRONT, collcheck_exit, collcheck_examples, collcheck_files,
	    "collrun(1), coll(7)" },
	{ "collstack", 1, "the stacks of every rank of a job, merged, and the rank the others "
	    "wait for", collstack_description, ENV_CORE | ENV_FRONT, collstack_exit,
	    collstack_examples, collcheck_files, "collrun(1), collcheck(1), coll(7), gdb(1), "
	    "eu-stack(1)" },
	{ "colltop", 1, "a live dashboard of ranks, links and GPUs over many hosts",
	    colltop_description, ENV_CORE | ENV_FRONT, colltop_exit, colltop_examples, NULL,
	    "collrun(1), collcheck(1), collstack(1), coll(7), top(1)" },
	{ "coll", 7, "environment variables of the coll tools and libcoll", coll_description,
	    ENV_RANK | ENV_CORE | ENV_FRONT, NULL, coll_examples, NULL,
	    "collrun(1), collcheck(1)" },
};

const struct mantext *
mantext_find(const char *page)
{
	for (size_t i = 0; i < sizeof mantext_table / sizeof mantext_table[0]; i++)
		if (strcmp(mantext_table[i].page, page) == 0)
			return &mantext_table[i];
	return NULL;
}
