package gateway

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/config"

	"github.com/voiceai-platform/voiceai/services/gateway/ratelimit"
)

// Config is the gateway's environment configuration; the all-in-one
// binary embeds it too.
type Config struct {
	HTTPAddr           string `env:"VOICEAI_HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	RateLimitPerMinute int64  `env:"VOICEAI_RATE_LIMIT_PER_MINUTE" envDefault:"100"`
	RateLimitPerHour   int64  `env:"VOICEAI_RATE_LIMIT_PER_HOUR" envDefault:"1000"`
	// RateLimitMax* hold a key's own limits (which a workspace admin sets)
	// to the operator's ceiling: 0, none.
	RateLimitMaxPerMinute int64         `env:"VOICEAI_RATE_LIMIT_MAX_PER_MINUTE" envDefault:"0"`
	RateLimitMaxPerHour   int64         `env:"VOICEAI_RATE_LIMIT_MAX_PER_HOUR" envDefault:"0"`
	MaxBodyBytes          int64         `env:"VOICEAI_MAX_BODY_BYTES" envDefault:"1048576"`
	UpstreamTimeout       time.Duration `env:"VOICEAI_UPSTREAM_TIMEOUT" envDefault:"30s"`
	TrustedProxies        []string      `env:"VOICEAI_TRUSTED_PROXIES" envSeparator:","`
	// ShutdownDelay is how long a stopping gateway goes on serving, not
	// ready, before it closes its listener: time for a load balancer to
	// see /readyz fail and send no more, so no connection is still
	// waiting to be accepted when the listener closes (the kernel resets
	// those).
	ShutdownDelay time.Duration `env:"VOICEAI_SHUTDOWN_DELAY" envDefault:"0s"`
	// HedgeAfter is how long a repeatable request waits before the
	// gateway sends a second copy (tests only; 0 = the forwarder's 2 s).
	HedgeAfter time.Duration `env:"-"`
}

// Validate checks the gateway settings.
func (c Config) Validate() error {
	var errs []error
	if c.RateLimitPerMinute < 1 || c.RateLimitPerHour < 1 {
		errs = append(errs, errors.New("VOICEAI_RATE_LIMIT_PER_MINUTE and VOICEAI_RATE_LIMIT_PER_HOUR must be at least 1"))
	}
	if c.RateLimitMaxPerMinute < 0 || c.RateLimitMaxPerHour < 0 ||
		(c.RateLimitMaxPerMinute > 0 && c.RateLimitMaxPerMinute < c.RateLimitPerMinute) || (c.RateLimitMaxPerHour > 0 && c.RateLimitMaxPerHour < c.RateLimitPerHour) {
		errs = append(errs, errors.New("VOICEAI_RATE_LIMIT_MAX_PER_MINUTE and VOICEAI_RATE_LIMIT_MAX_PER_HOUR must be 0 (no ceiling) or at least the default they bound"))
	}
	if c.MaxBodyBytes < 1024 || c.MaxBodyBytes > 64<<20 {
		errs = append(errs, fmt.Errorf("VOICEAI_MAX_BODY_BYTES %d: want 1024..%d", c.MaxBodyBytes, 64<<20))
	}
	if err := config.CheckListenAddr("VOICEAI_HTTP_ADDR", c.HTTPAddr, false); err != nil {
		errs = append(errs, err)
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay > time.Minute {
		errs = append(errs, fmt.Errorf("VOICEAI_SHUTDOWN_DELAY %s: want 0s..1m", c.ShutdownDelay))
	}
	if c.UpstreamTimeout <= 0 {
		errs = append(errs, errors.New("VOICEAI_UPSTREAM_TIMEOUT must be positive"))
	}
	if _, err := c.proxies(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c Config) proxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range c.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("VOICEAI_TRUSTED_PROXIES %q: not an IP or CIDR", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Settings turns a validated Config into gateway settings.
func (c Config) Settings() Settings {
	proxies, _ := c.proxies()
	return Settings{
		Limits:          ratelimit.Limits{PerMinute: c.RateLimitPerMinute, PerHour: c.RateLimitPerHour},
		MaxLimits:       ratelimit.Limits{PerMinute: c.RateLimitMaxPerMinute, PerHour: c.RateLimitMaxPerHour},
		MaxBodyBytes:    c.MaxBodyBytes,
		UpstreamTimeout: c.UpstreamTimeout,
		TrustedProxies:  proxies,
		HedgeAfter:      c.HedgeAfter,
		ShutdownDelay:   c.ShutdownDelay,
	}
}
