package redisurl

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Target
		str  string
	}{
		{"redis://127.0.0.1:7000", Target{Addrs: []string{"127.0.0.1:7000"}}, "redis://127.0.0.1:7000"},
		{"redis://a:7000,b:7001,c", Target{Addrs: []string{"a:7000", "b:7001", "c:6379"}}, "redis://a:7000,b:7001,c:6379"},
		{"rediss://drover:s%40cret@r1:6380/", Target{Addrs: []string{"r1:6380"}, TLS: true, Username: "drover", Password: "s@cret"}, "rediss://drover:xxxxx@r1:6380"},
		{"redis://:pw@[::1]:7000", Target{Addrs: []string{"[::1]:7000"}, Password: "pw"}, "redis://:xxxxx@[::1]:7000"},
		// a generated password with '/', '?' or '#' left unescaped
		{"redis://ops:a/b?c#d@h:1/", Target{Addrs: []string{"h:1"}, Username: "ops", Password: "a/b?c#d"}, "redis://ops:xxxxx@h:1"},
	} {
		got, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got.String() != c.str || strings.Join(got.Addrs, ",") != strings.Join(c.want.Addrs, ",") ||
			got.TLS != c.want.TLS || got.Username != c.want.Username || got.Password != c.want.Password {
			t.Errorf("Parse(%q) = %+v (%s); want %+v (%s)", c.in, got, got, c.want, c.str)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:7000", "http://h:1", "redis://", "redis://a:1,,b:2", "redis://h:1/3", "redis://u:p%zz@h:1", "redis://h:notaport", "redis://h:0", "redis://h:65536", "redis://a:1,b:x",
		"redis://u:p%zz/s3cr@h:1", "redis://u:p%zz?s3cr@h:1/3"} {
		_, err := Parse(bad)
		if err == nil {
			t.Errorf("Parse(%q) = nil error; want one", bad)
			continue
		}
		if strings.Contains(err.Error(), "p%zz") || strings.Contains(err.Error(), "s3cr") {
			t.Errorf("Parse(%q): error shows the password: %v", bad, err)
		}
	}
}
