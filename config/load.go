package config

import (
	"encoding"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// relocated are keys of older eras that now live in topic options or were
// removed; their presence refuses boot (server-behaviour.md 11.4).
var relocated = []string{
	"system.segment.size", "system.segment.preallocate",
	"system.topic.max_size", "system.topic.message_expiry",
	"system.partition.enforce_fsync", "system.partition.messages_required_to_save",
	"system.partition.size_of_messages_required_to_save",
	"system.message_deduplication", "extra",
}

// outsideSchema are IGGY_* variables that are not configuration paths (11.2.4).
var outsideSchema = map[string]bool{
	"IGGY_ROOT_USERNAME": true, "IGGY_ROOT_PASSWORD": true, "IGGY_CONFIG_PATH": true, "IGGY_ENV_PATH": true,
}

// Load builds the configuration: defaults, then the TOML file at path (if
// path is empty, IGGY_CONFIG_PATH from environ; a missing file is an error
// only when it was named explicitly), then the standard OTEL_* variables
// for telemetry, then IGGY_* overrides from environ ("KEY=value" strings,
// as os.Environ returns), then Validate. It returns a warning for every
// unknown key of the file, every unknown IGGY_* variable, and every key,
// set either way, that the node accepts but ignores (keys.go); the
// caller decides whether warnings refuse boot (system.strict_config).
func Load(path string, environ []string) (Config, []string, error) {
	cfg := Default()
	env := envMap(environ)
	var warnings []string
	explicit := path != ""
	if !explicit {
		path = env["IGGY_CONFIG_PATH"]
		explicit = path != ""
	}
	if path != "" {
		md, err := toml.DecodeFile(path, &cfg)
		switch {
		case errors.Is(err, os.ErrNotExist) && !explicit:
		case err != nil:
			return cfg, nil, fmt.Errorf("config %s: %w", path, err)
		default:
			for _, key := range relocated {
				if md.IsDefined(strings.Split(key, ".")...) {
					return cfg, nil, fmt.Errorf("config %s: %s was relocated or removed (server-behaviour.md 11.4); refusing to start", path, key)
				}
			}
			warnings = fileWarnings(path, md)
		}
	}
	for _, key := range relocated {
		if _, ok := env[envName(key)]; ok {
			return cfg, nil, fmt.Errorf("%s: %s was relocated or removed; refusing to start", envName(key), key)
		}
	}
	if err := applyOTelEnv(&cfg, env); err != nil {
		return cfg, nil, err
	}
	used := map[string]bool{}
	if err := applyEnv(reflect.ValueOf(&cfg).Elem(), "IGGY", env, used); err != nil {
		return cfg, nil, err
	}
	var envWarnings []string
	for k := range env {
		if !strings.HasPrefix(k, "IGGY_") || outsideSchema[k] {
			continue
		}
		if w := envWarning(k); w != "" {
			envWarnings = append(envWarnings, w)
		} else if !used[k] {
			envWarnings = append(envWarnings, "unknown configuration variable "+k)
		}
	}
	sort.Strings(envWarnings)
	if err := Validate(cfg); err != nil {
		return cfg, nil, fmt.Errorf("configuration refused: %w", err)
	}
	return cfg, append(warnings, envWarnings...), nil
}

func envName(dotted string) string {
	return "IGGY_" + strings.ToUpper(strings.ReplaceAll(dotted, ".", "_"))
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if i := strings.IndexByte(kv, '='); i > 0 {
			m[kv[:i]] = kv[i+1:]
		}
	}
	return m
}

var textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()

// applyEnv walks the struct v; prefix is the env name of v itself.
func applyEnv(v reflect.Value, prefix string, env map[string]string, used map[string]bool) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("toml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		name := prefix + "_" + strings.ToUpper(tag)
		fv := v.Field(i)
		switch {
		case fv.Kind() == reflect.Struct && !fv.Addr().Type().Implements(textUnmarshaler):
			if err := applyEnv(fv, name, env, used); err != nil {
				return err
			}
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			if err := applyEnvSlice(fv, name, env, used); err != nil {
				return err
			}
		case fv.Kind() == reflect.Map:
			// Opaque sections (sharding): accepted, not interpreted.
			for k := range env {
				if strings.HasPrefix(k, name+"_") {
					used[k] = true
				}
			}
		default:
			raw, ok := env[name]
			if !ok || raw == "" {
				continue
			}
			used[name] = true
			if err := setScalar(fv, raw); err != nil {
				return fmt.Errorf("%s=%q: %w", name, raw, err)
			}
		}
	}
	return nil
}

// applyEnvSlice handles NAME_<index>_FIELD variables, growing the slice to
// the highest index named.
func applyEnvSlice(fv reflect.Value, name string, env map[string]string, used map[string]bool) error {
	maxIdx := -1
	for k := range env {
		rest, ok := strings.CutPrefix(k, name+"_")
		if !ok {
			continue
		}
		idx, _, ok := strings.Cut(rest, "_")
		if n, err := strconv.Atoi(idx); ok && err == nil && n < 1024 && n > maxIdx {
			maxIdx = n
		}
	}
	for fv.Len() <= maxIdx {
		fv.Set(reflect.Append(fv, reflect.Zero(fv.Type().Elem())))
	}
	for i := 0; i <= maxIdx; i++ {
		if err := applyEnv(fv.Index(i), name+"_"+strconv.Itoa(i), env, used); err != nil {
			return err
		}
	}
	return nil
}

func setScalar(fv reflect.Value, raw string) error {
	raw = strings.TrimSpace(raw)
	if fv.Addr().Type().Implements(textUnmarshaler) {
		return fv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(raw))
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.ToLower(raw))
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, fv.Type().Bits())
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(raw, 10, fv.Type().Bits())
		if err != nil {
			return err
		}
		fv.SetUint(n)
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported list of %s", fv.Type().Elem().Kind())
		}
		fv.Set(reflect.ValueOf(parseList(raw)))
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(raw, fv.Type().Bits())
		if err != nil {
			return err
		}
		fv.SetFloat(f)
	default:
		return fmt.Errorf("unsupported field kind %s", fv.Kind())
	}
	return nil
}

// parseList reads a list variable written "[a, b]" or "a, b" (http.md
// 1.2); entries are trimmed of spaces and quotes, blanks dropped.
func parseList(raw string) []string {
	raw = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(raw), "["), "]")
	out := []string{}
	for _, s := range strings.Split(raw, ",") {
		if s = strings.Trim(strings.TrimSpace(s), `"'`); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// RootCredentials returns the root user's credentials: IGGY_ROOT_USERNAME
// and IGGY_ROOT_PASSWORD together, or iggy/iggy when neither is set
// (server-behaviour.md 2.1.2 with the embedded default). One without
// the other, or values outside the login bounds, refuse boot.
func RootCredentials(environ []string) (username, password string, err error) {
	env := envMap(environ)
	u, uok := env["IGGY_ROOT_USERNAME"]
	p, pok := env["IGGY_ROOT_PASSWORD"]
	switch {
	case !uok && !pok:
		return "iggy", "iggy", nil
	case uok != pok:
		return "", "", errors.New("IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD must be set together")
	case len(u) < 3 || len(u) > 50:
		return "", "", errors.New("IGGY_ROOT_USERNAME must be 3..=50 bytes")
	case len(p) < 3 || len(p) > 100:
		return "", "", errors.New("IGGY_ROOT_PASSWORD must be 3..=100 bytes")
	}
	return u, p, nil
}
