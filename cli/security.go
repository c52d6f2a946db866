package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"drover/auth"
	"drover/config"
	"drover/net/server"
	"drover/net/zsock"
	"drover/obs"
)

// addKeyFlags adds a client command's --key and --server-key (security.key,
// security.server_key). Every command that connects to a coordinator over
// the network takes them.
func addKeyFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	must(config.AddFlag(fs, "security.key", "key", ""))
	fs.Lookup("key").Usage = "this client's CURVE secret key: a file from drover keygen, or the 40 Z85 characters [" + config.EnvName("security.key") + "]"
	must(config.AddFlag(fs, "security.server_key", "server-key", ""))
	fs.Lookup("server-key").Usage = "the coordinator's CURVE public key: its .pub file, or the 40 Z85 characters [" + config.EnvName("security.server_key") + "]"
}

// clientSecurity reads the client's keys: none (no CURVE) when no server
// key is configured. A bad key is a configuration error (exit 2) naming
// the key.
func clientSecurity(cfg *config.Config) (zsock.Security, error) {
	sc := cfg.Security
	if sc.ServerKey == "" {
		if sc.Key != "" {
			return zsock.Security{}, &exitError{code: 2, err: errors.New("security.key (--key) is set but security.server_key (--server-key) is not: give the coordinator's public key too")}
		}
		return zsock.Security{}, nil
	}
	if sc.Key == "" {
		return zsock.Security{}, &exitError{code: 2, err: errors.New("security.server_key (--server-key) is set but security.key (--key) is not: the coordinator admits only the keys it lists; make one with drover keygen and have it added to the coordinator's authorized_keys")}
	}
	pub, err := auth.LoadPublic(sc.ServerKey)
	if err != nil {
		return zsock.Security{}, &exitError{code: 2, err: fmt.Errorf("security.server_key: %w", err)}
	}
	kp, err := auth.LoadSecret(sc.Key)
	if err != nil {
		return zsock.Security{}, &exitError{code: 2, err: fmt.Errorf("security.key: %w", err)}
	}
	return zsock.Security{ServerPublic: pub, Public: kp.Public, Secret: kp.Secret}, nil
}

// addServerSecurityFlags adds the flags of a command that runs a
// coordinator: --key, --authorized-keys, --insecure, --metrics-token.
func addServerSecurityFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	must(config.AddFlag(fs, "security.key", "key", ""))
	fs.Lookup("key").Usage = "the coordinator's CURVE secret key (drover keygen): every listener then uses CURVE and admits only --authorized-keys [" + config.EnvName("security.key") + "]"
	must(config.AddFlag(fs, "security.authorized_keys", "authorized-keys", ""))
	must(config.AddFlag(fs, "security.insecure", "insecure", ""))
	must(config.AddFlag(fs, "metrics.token", "metrics-token", ""))
}

// serverSecurity reads the coordinator's key and authorized keys: nil
// when no key is configured. A bad key or file is a configuration error
// (exit 2) naming the key.
func serverSecurity(cfg *config.Config, log *slog.Logger, m *obs.Metrics) (*server.Auth, error) {
	sc := cfg.Security
	if sc.Key == "" {
		if sc.AuthorizedKeys != "" {
			return nil, &exitError{code: 2, err: errors.New("security.authorized_keys (--authorized-keys) is set but security.key (--key) is not: client keys are checked only with CURVE on, which needs the coordinator's key")}
		}
		return nil, nil
	}
	kp, err := auth.LoadSecret(sc.Key)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("security.key: %w", err)}
	}
	if sc.AuthorizedKeys == "" {
		return nil, &exitError{code: 2, err: errors.New("security.key (--key) is set but security.authorized_keys (--authorized-keys) is not: no client could connect; list them one per line as ROLE PUBLIC-KEY [comment]")}
	}
	keys, err := auth.NewAuthorizer(sc.AuthorizedKeys, log)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("security.authorized_keys: %w", err)}
	}
	log.Info("CURVE on every listener", "server_key", kp.Public, "authorized_keys", sc.AuthorizedKeys, "clients", keys.Keys().Len())
	a := &server.Auth{Secret: kp.Secret, Keys: keys}
	if m != nil {
		a.OnForbidden = func(e auth.Entry) { m.Forbidden(e.Key, e.Role.String()) }
		a.OnRefused = func(l auth.Listener) { m.HandshakeRefused(l.String()) }
	}
	return a, nil
}

// watchKeys re-reads the authorized keys on SIGHUP and when the file
// changes, until ctx ends.
func watchKeys(ctx context.Context, a *server.Auth, log *slog.Logger) {
	if a == nil {
		return
	}
	if err := a.Keys.Watch(ctx); err != nil {
		log.Error("the authorized keys are not watched: send SIGHUP after changing them", "err", err)
	}
}

// checkExposure is the one exposure rule of every command that runs a
// coordinator (serve, the console's embedded coordinator, crawl): a
// listener beyond this machine needs CURVE keys, unless security.insecure
// accepts that it has none. keys says whether the command takes keys:
// crawl does not, so its listeners stay on loopback or are --insecure
// whatever security.key holds. The error names the flags to add.
func checkExposure(cfg *config.Config, keys bool) error {
	if (keys && cfg.Security.Key != "") || cfg.Security.Insecure {
		return nil
	}
	remedy := "Add --key FILE --authorized-keys FILE (drover keygen makes the key; see README, \"Running workers on other machines\"), " +
		"or --insecure to accept that"
	if !keys {
		remedy = "drover crawl takes no keys: bind it to loopback, or add --insecure to accept that " +
			"(for keys, run drover serve --key with remote workers and define the crawl there)"
	}
	for _, l := range []struct{ key, flag, ep string }{
		{"peers.listen", "--bind", cfg.Peers.Listen},
		{"admin.listen", "--admin", cfg.Admin.Listen},
		{"events.listen", "--events", cfg.Events.Listen},
	} {
		if l.ep == "" || l.ep == "-" || loopbackEndpoint(l.ep) {
			continue
		}
		return &exitError{code: 2, err: fmt.Errorf(
			"%s %s (%s) listens beyond this machine without keys: anyone who reaches it could act as any worker or operator. %s",
			l.flag, l.ep, l.key, remedy)}
	}
	return nil
}

// loopbackEndpoint reports whether a ZeroMQ endpoint is reachable only
// from this machine: ipc:// and inproc://, or tcp:// on a loopback
// address or localhost.
func loopbackEndpoint(ep string) bool {
	scheme, rest, ok := strings.Cut(ep, "://")
	if !ok {
		return false
	}
	switch scheme {
	case "ipc", "inproc":
		return true
	case "tcp":
	default:
		return false
	}
	host, _, err := net.SplitHostPort(rest)
	if err != nil {
		return false
	}
	return loopbackHost(host)
}

func loopbackHost(host string) bool {
	if i := strings.IndexByte(host, ';'); i >= 0 { // tcp://source;host
		host = host[i+1:]
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// metricsToken is metrics.token: the token itself, or read from the file it
// names (a file path: it contains a "/" and the file exists).
func metricsToken(cfg *config.Config) (string, error) {
	t := cfg.Metrics.Token
	if t == "" {
		return "", nil
	}
	if strings.Contains(t, "/") {
		if b, err := os.ReadFile(t); err == nil {
			t = strings.TrimSpace(string(b))
			if t == "" {
				return "", &exitError{code: 2, err: fmt.Errorf("metrics.token: the file %s is empty", cfg.Metrics.Token)}
			}
		}
	}
	return t, nil
}

// metricsExposed reports whether the metrics listener is reachable from
// other machines.
func metricsExposed(addr string) bool {
	if addr == "" {
		return false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if host == "" {
		return true
	}
	return !loopbackHost(host)
}
