package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// W5Bound accounts for the machine's CPU over PostgreSQL's W5 (from the workers' release to the
// last one's exit): what the server's processes used (the postmaster and every child, backends
// and WAL writer alike), what the W5 worker processes used over their appends, and the rest of
// the machine's busy time (the benchmark's own process, other programs, kernel threads,
// interrupts), each per append; and the WAL flushes of that time. CPUBoundPerS is the most
// appends a second the machine's cores allow at the server's and the workers' CPU per append,
// and MaxRatioToW1 that rate over W1's: W5 cannot pass it whatever the locks do, so it is the
// highest W5/W1 ratio the code of this run could reach on this machine. W1 is the same account
// for W1's one writer (this process), with where its time per append goes; ExtraCPUUSPerAppend
// is what an append costs in W5 beyond what it costs in W1. Measured only when the server runs
// on this machine (its processes are visible in /proc).
type W5Bound struct {
	Cores                 int     `json:"cores"`
	WallS                 float64 `json:"wall_s"`
	Appends               int     `json:"appends"`
	MachineBusyShare      float64 `json:"machine_busy_share"`
	ServerCPUUSPerAppend  float64 `json:"server_cpu_us_per_append"`
	ClientsCPUUSPerAppend float64 `json:"clients_cpu_us_per_append"`
	OtherCPUUSPerAppend   float64 `json:"other_cpu_us_per_append"`
	CPUBoundPerS          float64 `json:"cpu_bound_per_s"`
	W5ShareOfCPUBound     float64 `json:"w5_share_of_cpu_bound"`
	MaxRatioToW1          float64 `json:"max_ratio_to_w1"`
	WALFlushes            int64   `json:"wal_flushes"`
	AppendsPerFlush       float64 `json:"appends_per_flush"`
	FlushMSMean           float64 `json:"flush_ms_mean,omitempty"`
	FlushBusyShare        float64 `json:"flush_busy_share,omitempty"`
	W1                    *W1CPU  `json:"w1,omitempty"`
	ExtraCPUUSPerAppend   float64 `json:"w5_extra_cpu_us_per_append,omitempty"`
}

// W1CPU is where W1's time goes per append: the server's CPU, the writer's (this process), the
// WAL flush (with track_wal_io_timing) and the rest of the wall time, which is waiting: for the
// other process to be scheduled and the round trip. The server's CPU includes its background
// processes (autovacuum, checkpointer, WAL writer), which run beside the appends on the other
// core, so the wait is a lower bound and can come out negative.
type W1CPU struct {
	LatencyUS            float64 `json:"latency_us_per_append"`
	ServerCPUUSPerAppend float64 `json:"server_cpu_us_per_append"`
	ClientCPUUSPerAppend float64 `json:"client_cpu_us_per_append"`
	OtherCPUUSPerAppend  float64 `json:"other_cpu_us_per_append"`
	FlushUSPerAppend     float64 `json:"flush_us_per_append,omitempty"`
	WaitUSPerAppend      float64 `json:"wait_us_per_append,omitempty"`
}

// cpuReading is one reading of the counters W5Bound is computed from. Ticks are clock ticks
// (USER_HZ, 100 a second on Linux).
type cpuReading struct {
	machineBusy, machineIdle int64
	server                   int64
	wal                      walCounters
}

// cpuSpan is the readings around one workload: its wall time, appends, and the appending
// processes' CPU seconds over them; timed is whether the server tracks flush times.
type cpuSpan struct {
	before, after cpuReading
	wallS         float64
	appends       int
	clientsCPUS   float64
	timed         bool
}

// clockTick is Linux's USER_HZ: /proc's CPU times count in it.
const clockTick = 0.01

// perAppend is span's server, clients' and the rest of the machine's CPU per append, in µs.
func (c *cpuSpan) perAppend() (server, clients, other float64) {
	n := float64(c.appends)
	busy := float64(c.after.machineBusy-c.before.machineBusy) * clockTick
	srv := float64(c.after.server-c.before.server) * clockTick
	return round3(srv * 1e6 / n), round3(c.clientsCPUS * 1e6 / n), round3((busy - srv - c.clientsCPUS) * 1e6 / n)
}

func (c *cpuSpan) valid() bool { return c != nil && c.appends > 0 && c.wallS > 0 }

// w5Bound computes the bound from W5's span (nil: nothing), W1's (nil: no W1 part), the cores
// and W1's rate.
func w5Bound(w5, w1 *cpuSpan, cores int, w1PerS float64) *W5Bound {
	if !w5.valid() || cores <= 0 {
		return nil
	}
	n := float64(w5.appends)
	busy := float64(w5.after.machineBusy-w5.before.machineBusy) * clockTick
	total := busy + float64(w5.after.machineIdle-w5.before.machineIdle)*clockTick
	b := &W5Bound{Cores: cores, WallS: round3(w5.wallS), Appends: w5.appends,
		WALFlushes: w5.after.wal.syncs - w5.before.wal.syncs}
	b.ServerCPUUSPerAppend, b.ClientsCPUUSPerAppend, b.OtherCPUUSPerAppend = w5.perAppend()
	if total > 0 {
		b.MachineBusyShare = round3(busy / total)
	}
	if perAppend := b.ServerCPUUSPerAppend + b.ClientsCPUUSPerAppend; perAppend > 0 {
		b.CPUBoundPerS = round3(float64(cores) * 1e6 / perAppend)
		b.W5ShareOfCPUBound = round3(n / w5.wallS / b.CPUBoundPerS)
		if w1PerS > 0 {
			b.MaxRatioToW1 = round3(b.CPUBoundPerS / w1PerS)
		}
	}
	if b.WALFlushes > 0 {
		b.AppendsPerFlush = round3(n / float64(b.WALFlushes))
		if w5.timed {
			ms := w5.after.wal.syncMS - w5.before.wal.syncMS
			b.FlushMSMean = round3(ms / float64(b.WALFlushes))
			b.FlushBusyShare = round3(ms / 1000 / w5.wallS)
		}
	}
	if w1.valid() {
		c := &W1CPU{LatencyUS: round3(w1.wallS * 1e6 / float64(w1.appends))}
		c.ServerCPUUSPerAppend, c.ClientCPUUSPerAppend, c.OtherCPUUSPerAppend = w1.perAppend()
		if w1.timed {
			c.FlushUSPerAppend = round3((w1.after.wal.syncMS - w1.before.wal.syncMS) * 1000 / float64(w1.appends))
			c.WaitUSPerAppend = round3(c.LatencyUS - c.ServerCPUUSPerAppend - c.ClientCPUUSPerAppend - c.FlushUSPerAppend)
		}
		b.W1 = c
		b.ExtraCPUUSPerAppend = round3(b.ServerCPUUSPerAppend + b.ClientsCPUUSPerAppend - c.ServerCPUUSPerAppend - c.ClientCPUUSPerAppend)
	}
	return b
}

// cpuAccount takes a workload's readings: before just ahead of its first append, after just
// behind its last. A failed reading is logged and leaves the account empty (the bound is a
// diagnostic, not a target).
type cpuAccount struct {
	ok, done    bool
	postmaster  int
	start       time.Time
	wallS       float64
	first, last cpuReading
	selfCPUS    float64 // this process's CPU seconds at before
	clientsCPUS float64
	appends     int
}

func (a *cpuAccount) before(ctx context.Context, url string, log io.Writer) {
	pid, err := postmasterPID(ctx, url)
	if err == nil {
		a.first, err = readCPU(ctx, url, pid)
	}
	if err != nil {
		fmt.Fprintf(log, "postgres: no CPU accounting: %v\n", err)
		return
	}
	a.ok, a.postmaster = true, pid
	a.selfCPUS = processCPU().Seconds()
	a.start = time.Now()
}

// after closes the account; clientsCPUS is the appending processes' CPU seconds over it.
func (a *cpuAccount) after(ctx context.Context, url string, log io.Writer, clientsCPUS float64) {
	if !a.ok {
		return
	}
	a.wallS = time.Since(a.start).Seconds()
	var err error
	if a.last, err = readCPU(ctx, url, a.postmaster); err != nil {
		fmt.Fprintf(log, "postgres: no CPU accounting: %v\n", err)
		a.ok = false
		return
	}
	a.clientsCPUS, a.done = clientsCPUS, true
}

// span is the account's readings, nil when it has none.
func (a *cpuAccount) span(timed bool) *cpuSpan {
	if !a.ok || !a.done {
		return nil
	}
	return &cpuSpan{before: a.first, after: a.last, wallS: a.wallS, appends: a.appends, clientsCPUS: a.clientsCPUS, timed: timed}
}

// postmasterPID is the PID of the server behind url when it runs on this machine: the parent
// of a backend's process.
func postmasterPID(ctx context.Context, url string) (int, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	st, err := readProcStat(pid)
	if err != nil {
		return 0, fmt.Errorf("postgres server is not on this machine (no /proc/%d): %w", pid, err)
	}
	return st.ppid, nil
}

type procStat struct {
	ppid                 int
	ticks, childrenTicks int64 // utime+stime; cutime+cstime (reaped children)
}

// readProcStat reads /proc/PID/stat.
func readProcStat(pid int) (procStat, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// Fields after the command: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
	f := strings.Fields(s[i+2:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var v [5]int64
	for k, idx := range []int{1, 11, 12, 13, 14} {
		if v[k], err = strconv.ParseInt(f[idx], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	return procStat{ppid: int(v[0]), ticks: v[1] + v[2], childrenTicks: v[3] + v[4]}, nil
}

// treeTicks is the CPU time of process pid and its children, live and reaped, in clock ticks.
// A child reaped while the children are read would count twice or not at all, so the reading
// is repeated until the reaped children's total is the same before and after it.
func treeTicks(pid int) (int64, error) {
	for range 100 {
		first, err := readProcStat(pid)
		if err != nil {
			return 0, err
		}
		live, err := childrenTicks(pid)
		if err != nil {
			return 0, err
		}
		last, err := readProcStat(pid)
		if err != nil {
			return 0, err
		}
		if last.childrenTicks == first.childrenTicks {
			return last.ticks + last.childrenTicks + live, nil
		}
	}
	return 0, errors.New("process tree kept changing")
}

// childrenTicks sums utime+stime of pid's live children (zombies included).
func childrenTicks(pid int) (int64, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(c)
		if err != nil || st.ppid != pid {
			continue // gone meanwhile, or not a child
		}
		sum += st.ticks
	}
	return sum, nil
}

// machineTicks reads the machine's busy and idle (idle and iowait) time from /proc/stat.
func machineTicks() (busy, idle int64, err error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, errors.New("/proc/stat: unexpected format")
	}
	// user nice system idle iowait irq softirq steal (guest time is inside user).
	for i, x := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i == 3 || i == 4 {
			idle += v
		} else {
			busy += v
		}
	}
	return busy, idle, nil
}

// readCPU takes one reading for W5Bound.
func readCPU(ctx context.Context, url string, postmaster int) (cpuReading, error) {
	var r cpuReading
	var err error
	if r.wal, err = readWAL(ctx, url); err != nil {
		return r, err
	}
	if r.server, err = treeTicks(postmaster); err != nil {
		return r, err
	}
	r.machineBusy, r.machineIdle, err = machineTicks()
	return r, err
}
