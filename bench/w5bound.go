package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// W5Bound accounts for the machine's CPU over PostgreSQL's W5 (from the workers' release to the
// last one's exit): what the server's processes used (the postmaster and every child, backends
// and WAL writer alike), what the W5 worker processes used over their appends, and the rest of
// the machine's busy time (the benchmark's own process, other programs, kernel threads,
// interrupts), each per append; and the WAL flushes of that time. CPUBoundPerS is the most
// appends a second the machine's cores allow at the server's and the workers' CPU per append,
// and MaxRatioToW1 that rate over W1's: W5 cannot pass it whatever the locks do, so it is the
// highest W5/W1 ratio the code of this run could reach on this machine. Measured only when the
// server runs on this machine (its processes are visible in /proc).
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
}

// cpuReading is one reading of the counters W5Bound is computed from. Ticks are clock ticks
// (USER_HZ, 100 a second on Linux).
type cpuReading struct {
	machineBusy, machineIdle int64
	server                   int64
	wal                      walCounters
}

// clockTick is Linux's USER_HZ: /proc's CPU times count in it.
const clockTick = 0.01

// w5Bound computes the bound from the readings before and after W5, the workers' CPU seconds
// over their appends and W1's rate; timed is whether the flush times were tracked.
func w5Bound(before, after cpuReading, wallS float64, appends int, clientsCPUS, w1PerS float64, cores int, timed bool) *W5Bound {
	if appends <= 0 || wallS <= 0 || cores <= 0 {
		return nil
	}
	n := float64(appends)
	busy := float64(after.machineBusy-before.machineBusy) * clockTick
	total := busy + float64(after.machineIdle-before.machineIdle)*clockTick
	server := float64(after.server-before.server) * clockTick
	b := &W5Bound{Cores: cores, WallS: round3(wallS), Appends: appends,
		ServerCPUUSPerAppend:  round3(server * 1e6 / n),
		ClientsCPUUSPerAppend: round3(clientsCPUS * 1e6 / n),
		OtherCPUUSPerAppend:   round3((busy - server - clientsCPUS) * 1e6 / n),
		WALFlushes:            after.wal.syncs - before.wal.syncs,
	}
	if total > 0 {
		b.MachineBusyShare = round3(busy / total)
	}
	if perAppend := server + clientsCPUS; perAppend > 0 {
		b.CPUBoundPerS = round3(float64(cores) * n / perAppend)
		b.W5ShareOfCPUBound = round3(n / wallS / b.CPUBoundPerS)
		if w1PerS > 0 {
			b.MaxRatioToW1 = round3(b.CPUBoundPerS / w1PerS)
		}
	}
	if b.WALFlushes > 0 {
		b.AppendsPerFlush = round3(n / float64(b.WALFlushes))
		if timed {
			ms := after.wal.syncMS - before.wal.syncMS
			b.FlushMSMean = round3(ms / float64(b.WALFlushes))
			b.FlushBusyShare = round3(ms / 1000 / wallS)
		}
	}
	return b
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

// numCores is the number of CPUs this process may run on.
func numCores() int { return runtime.NumCPU() }
