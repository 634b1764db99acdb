package bench

// Report is the one JSON object a run prints (WORKLOAD.md section 4). Field order is the output
// order.
type Report struct {
	Impl          string       `json:"impl"`
	Harness       string       `json:"harness"`
	Peer          PeerInfo     `json:"peer"`
	Env           EnvInfo      `json:"env"`
	Config        ConfigInfo   `json:"config"`
	Workload      WorkloadInfo `json:"workload"`
	W1            W1Result     `json:"w1_append"`
	W2            W2Result     `json:"w2_resume"`
	W3            W3Result     `json:"w3_search"`
	W4            W4Result     `json:"w4_list"`
	W5            W5Result     `json:"w5_contention"`
	TotalRuntimeS float64      `json:"total_runtime_s"`
}

// PeerInfo identifies the code under test: for us, this module's build.
type PeerInfo struct {
	Repo             string `json:"repo"`
	Version          string `json:"version"`
	Commit           string `json:"commit"`
	CommitTime       string `json:"commit_time,omitempty"`
	Modified         bool   `json:"modified"`
	ExecutableSHA256 string `json:"file_sha256"`
	SchemaVersion    *int   `json:"schema_version"`
}

// EnvInfo describes the machine and toolchain.
type EnvInfo struct {
	GoVersion     string `json:"go_version"`
	SQLiteVersion string `json:"sqlite_version"`
	CPUs          int    `json:"cpus"`
	Platform      string `json:"platform"`
	DBDir         string `json:"db_dir"`
}

// ConfigInfo records the parameters and the durability settings of a run.
type ConfigInfo struct {
	Sizes
	ListLimit     int    `json:"list_limit"`
	SearchLimit   int    `json:"search_limit"`
	ResumeTop     int    `json:"resume_sessions"`
	ResumeRounds  int    `json:"resume_rounds"`
	W5Sessions    int    `json:"w5_sessions_per_proc"`
	ScaledDown    bool   `json:"scaled_down"`
	Synchronous   string `json:"synchronous"`
	JournalMode   string `json:"journal_mode"`
	Driver        string `json:"driver"`
	DriverVersion string `json:"driver_version"`
}

// WorkloadInfo carries the generator checksums and the statistics of the generated data.
type WorkloadInfo struct {
	MessagesSHA256   string         `json:"messages_sha256"`
	QueriesSHA256    string         `json:"queries_sha256"`
	W5MessagesSHA256 []string       `json:"w5_messages_sha256"`
	SessionSizesHead []int          `json:"session_sizes_head"`
	SessionSizeMin   int            `json:"session_size_min"`
	SessionSizeMax   int            `json:"session_size_max"`
	Messages         MessageStats   `json:"messages"`
	QueryCategories  map[string]int `json:"query_categories"`
	GenerateS        float64        `json:"generate_s"`
}

// W1Result is the append workload.
type W1Result struct {
	OpenMS           float64 `json:"open_ms"`
	CreateSessionsMS float64 `json:"create_sessions_ms"`
	N                int     `json:"n"`
	TotalS           float64 `json:"total_s"`
	MsgsPerS         float64 `json:"msgs_per_s"`
	Latency
	Errors       int   `json:"errors"`
	DBBytesAfter int64 `json:"db_bytes_after"`
	VerifyOK     bool  `json:"verify_ok"`
}

// W2Result is the resume workload.
type W2Result struct {
	N int `json:"n"`
	Latency
	MessagesReturnedTotal int  `json:"messages_returned_total"`
	Errors                int  `json:"errors"`
	VerifyOK              bool `json:"verify_ok"`
}

// W3Result is the search workload.
type W3Result struct {
	N int `json:"n"`
	Latency
	Exceptions         int                       `json:"exceptions"`
	ResultsTotal       int                       `json:"results_total"`
	QueriesWithResults int                       `json:"queries_with_results"`
	EngineRejected     *int                      `json:"engine_rejected"`
	ByCategory         map[string]CategoryResult `json:"by_category"`
}

// CategoryResult is W3 restricted to one query category.
type CategoryResult struct {
	N          int     `json:"n"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	Results    int     `json:"results"`
	Nonempty   int     `json:"nonempty"`
	Exceptions int     `json:"exceptions"`
}

// W4Result is the session-list workload.
type W4Result struct {
	N int `json:"n"`
	Latency
	RowsExpected int  `json:"rows_expected"`
	Errors       int  `json:"errors"`
	VerifyOK     bool `json:"verify_ok"`
}

// W5Result is the multi-process contention workload.
type W5Result struct {
	Procs    int     `json:"procs"`
	N        int     `json:"n"`
	WallS    float64 `json:"wall_s"`
	MsgsPerS float64 `json:"msgs_per_s"`
	Latency
	Errors      int       `json:"errors"`
	LockRetries *int64    `json:"lock_retries"`
	PerProcS    []float64 `json:"per_proc_s"`
	Verify      W5Verify  `json:"verify"`
}

// W5Verify is the after-run check of the W5 sessions and the W1 data beside them.
type W5Verify struct {
	Expected             int  `json:"expected"`
	Found                int  `json:"found"`
	Missing              int  `json:"missing"`
	Duplicates           int  `json:"duplicates"`
	SessionsOutOfOrder   int  `json:"sessions_out_of_order"`
	SessionCountMismatch int  `json:"session_count_mismatch"`
	W1MessagesIntact     bool `json:"w1_messages_intact"`
	OK                   bool `json:"ok"`
}
