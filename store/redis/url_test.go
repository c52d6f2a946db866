package redis

import "testing"

// ParseURL is internal/redisurl's Parse (tested there): a URL that parses
// and one that does not.
func TestParseURL(t *testing.T) {
	if got, err := ParseURL("rediss://u:pw@a:7000,b"); err != nil || got.String() != "rediss://u:xxxxx@a:7000,b:6379" || !got.TLS {
		t.Errorf("ParseURL = %+v (%s), %v; want two TLS seeds, the password hidden", got, got, err)
	}
	if _, err := ParseURL("redis://h:notaport"); err == nil {
		t.Errorf("ParseURL of a port that is not a number: nil error")
	}
}
