module iggynode

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/OneOfOne/xxhash v1.2.8 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
