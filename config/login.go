package config

// Login is the login section (issue 17): how the node verifies
// credentials off its metadata actor and slows down failed logins.
// Package actors (auth.go) documents what a refused login is answered.
//
//	[login]
//	verify_workers = 0            # Argon2id goroutines; 0: max(1, GOMAXPROCS/2)
//	verify_queue = 64             # checks waiting for a worker; beyond: result 58
//	[login.throttle]
//	enabled = true
//	base_delay = "100ms"          # block after the first counted failure
//	max_delay = "5s"              # the doubling stops here
//	quiet_period = "10s"          # each one without failures halves the delay
//	address_free_failures = 5     # failures an address makes before its own delay
//	max_in_flight_per_address = 1 # verifications one address may have running
//	max_waiting_per_address = 64  # logins of a busy address waiting their turn; beyond: result 58
//	max_tracked = 16384           # addresses and (user, address) keys held (LRU)
//
// A zero verify_queue, base_delay, max_delay, quiet_period,
// max_in_flight_per_address, max_waiting_per_address or max_tracked takes
// the default above;
// address_free_failures = 0 delays an address from its first failure.
type Login struct {
	VerifyWorkers uint32        `toml:"verify_workers"`
	VerifyQueue   uint32        `toml:"verify_queue"`
	Throttle      LoginThrottle `toml:"throttle"`
}

// LoginThrottle is login.throttle (metadata.LoginThrottle's rules).
type LoginThrottle struct {
	Enabled               bool     `toml:"enabled"`
	BaseDelay             Duration `toml:"base_delay"`
	MaxDelay              Duration `toml:"max_delay"`
	QuietPeriod           Duration `toml:"quiet_period"`
	AddressFreeFailures   uint32   `toml:"address_free_failures"`
	MaxInFlightPerAddress uint32   `toml:"max_in_flight_per_address"`
	MaxWaitingPerAddress  uint32   `toml:"max_waiting_per_address"`
	MaxTracked            uint32   `toml:"max_tracked"`
}

func defaultLogin() Login {
	return Login{VerifyQueue: 64, Throttle: LoginThrottle{Enabled: true, BaseDelay: Duration(100e6), MaxDelay: Duration(5e9),
		QuietPeriod: Duration(10e9), AddressFreeFailures: 5, MaxInFlightPerAddress: 1, MaxWaitingPerAddress: 64, MaxTracked: 16384}}
}
