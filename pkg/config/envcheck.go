package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// checkValues parses every variable T reads that is set, by the type of
// its field, so a bad value is reported by its variable's name (the
// parsing library names the Go field, which an operator never sees).
func checkValues(t reflect.Type) error {
	var errs []error
	eachVariable(t, func(key string, f reflect.StructField) {
		if v, set := os.LookupEnv(key); set && v != "" {
			if want := badValue(f.Type, v); want != "" {
				errs = append(errs, fmt.Errorf("%s %q: want %s", key, v, want))
			}
		}
	})
	return errors.Join(errs...)
}

// eachVariable calls fn once with each environment variable a
// configuration of type t reads (its fields' env tags, those of nested
// structs included) and the field that reads it first.
func eachVariable(t reflect.Type, fn func(key string, f reflect.StructField)) {
	seen := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("env"), ",")
			if key == "" || key == "-" {
				if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
					walk(f.Type)
				}
				continue
			}
			if !seen[key] {
				seen[key] = true
				fn(key, f)
			}
		}
	}
	walk(t)
}

// badValue says what v should be for a field of type t, or "" when it
// parses.
func badValue(t reflect.Type, v string) string {
	if t == reflect.TypeFor[time.Duration]() {
		if _, err := time.ParseDuration(v); err != nil {
			return "a duration such as 500ms, 30s or 2m"
		}
		return ""
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(v, 10, t.Bits()); err != nil {
			return "a whole number"
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, err := strconv.ParseUint(v, 10, t.Bits()); err != nil {
			return "a whole number, 0 or more"
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(v, t.Bits()); err != nil {
			return "a number"
		}
	case reflect.Bool:
		if _, err := strconv.ParseBool(v); err != nil {
			return "true or false"
		}
	}
	return ""
}

// CheckListenAddr refuses a listen address that cannot be listened on,
// naming its variable: host:port, with a port from 0 to 65535 (0: any
// free one). off, when allowed, turns the listener off.
func CheckListenAddr(key, addr string, offAllowed bool) error {
	if offAllowed && addr == "off" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		if _, err = strconv.ParseUint(port, 10, 16); err == nil && host != "" && net.ParseIP(host) == nil && !validHostname(host) {
			err = errors.New("bad host")
		}
	}
	if err != nil {
		if offAllowed {
			return fmt.Errorf("%s %q: want host:port (e.g. 127.0.0.1:9464, :9464) or off", key, addr)
		}
		return fmt.Errorf("%s %q: want host:port (e.g. 127.0.0.1:8080 or :8080)", key, addr)
	}
	return nil
}

func validHostname(h string) bool {
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// VariablesOf are the environment variables a configuration of type T
// reads, sorted.
func VariablesOf[T any]() []string {
	var out []string
	eachVariable(reflect.TypeFor[T](), func(key string, _ reflect.StructField) { out = append(out, key) })
	slices.Sort(out)
	return out
}
