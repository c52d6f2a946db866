package zsock

import (
	"fmt"
	"strings"

	"github.com/pebbe/zmq4"
)

// Security holds CURVE (RFC 26/CurveZMQ) keys, all in Z85 text (40
// characters). The zero value means no security (ZeroMQ's NULL mechanism),
// which is what the loopback defaults use.
//
// On a server socket (Router, Pub), Secret turns CURVE on: traffic is
// encrypted and clients must know the server's public key. On a client
// socket (Dealer, Sub), ServerPublic turns CURVE on and authenticates the
// server; Public and Secret are the client's own pair (a fresh pair is made
// when both are empty).
//
// Clients are authenticated when the server socket has a Domain and a ZAP
// handler answers for it (HandleZAP): each handshake is then put to the
// handler, which admits the client's public key or refuses it. Without a
// Domain any client that knows the server's public key may connect.
type Security struct {
	ServerPublic string // client sockets: the server's public key
	Public       string // this socket's public key (clients)
	Secret       string // this socket's secret key (servers; clients)
	// Domain is a server socket's ZAP domain (ZMQ_ZAP_DOMAIN): with CURVE,
	// the ZAP handler registered for it (HandleZAP) decides every
	// handshake; the process's handler refuses domains nobody registered.
	// Register the domain before the socket binds and keep it until the
	// socket is closed: libzmq admits everyone when no handler runs at all,
	// unless it has the draft option ZMQ_ZAP_ENFORCE_DOMAIN, which is set
	// where it exists.
	Domain string
}

// NewKeyPair returns a fresh CURVE key pair in Z85.
func NewKeyPair() (public, secret string, err error) {
	if !zmq4.HasCurve() {
		return "", "", fmt.Errorf("zsock: new key pair: this libzmq was built without CURVE")
	}
	public, secret, err = zmq4.NewCurveKeypair()
	if err != nil {
		return "", "", fmt.Errorf("zsock: new key pair: %w", err)
	}
	return public, secret, nil
}

func checkKey(name, k string) error {
	if len(k) != 40 {
		return fmt.Errorf("%s key: %d characters, want 40 (Z85)", name, len(k))
	}
	for i := range len(k) {
		if !strings.ContainsRune(z85Alphabet, rune(k[i])) {
			return fmt.Errorf("%s key: character %d is %q, want Z85", name, i, k[i])
		}
	}
	return nil
}

const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

func needCurve() error {
	if !zmq4.HasCurve() {
		return fmt.Errorf("CURVE requested but this libzmq was built without it")
	}
	return nil
}

func (sec Security) applyServer(s *zmq4.Socket) error {
	if sec.Secret == "" {
		if sec.Public != "" || sec.ServerPublic != "" {
			return fmt.Errorf("security: a server socket needs Secret (its own secret key), got only public keys")
		}
		return nil
	}
	if err := needCurve(); err != nil {
		return err
	}
	if err := checkKey("secret", sec.Secret); err != nil {
		return err
	}
	if err := s.SetCurveServer(1); err != nil {
		return fmt.Errorf("curve server: %w", err)
	}
	if err := s.SetCurveSecretkey(sec.Secret); err != nil {
		return fmt.Errorf("curve secret key: %w", err)
	}
	if sec.Domain != "" {
		if err := s.SetZapDomain(sec.Domain); err != nil {
			return fmt.Errorf("zap domain: %w", err)
		}
		if err := setZAPEnforceDomain(s); err != nil {
			return fmt.Errorf("zap enforce domain: %w", err)
		}
	}
	return nil
}

func (sec Security) applyClient(s *zmq4.Socket) error {
	if sec.ServerPublic == "" {
		if sec.Public != "" || sec.Secret != "" {
			return fmt.Errorf("security: a client socket needs ServerPublic (the server's public key) to use its own keys")
		}
		return nil
	}
	if err := needCurve(); err != nil {
		return err
	}
	if err := checkKey("server public", sec.ServerPublic); err != nil {
		return err
	}
	pub, sec2 := sec.Public, sec.Secret
	if pub == "" && sec2 == "" {
		var err error
		if pub, sec2, err = NewKeyPair(); err != nil {
			return err
		}
	}
	if err := checkKey("public", pub); err != nil {
		return err
	}
	if err := checkKey("secret", sec2); err != nil {
		return err
	}
	if err := s.SetCurveServerkey(sec.ServerPublic); err != nil {
		return fmt.Errorf("curve server key: %w", err)
	}
	if err := s.SetCurvePublickey(pub); err != nil {
		return fmt.Errorf("curve public key: %w", err)
	}
	if err := s.SetCurveSecretkey(sec2); err != nil {
		return fmt.Errorf("curve secret key: %w", err)
	}
	return nil
}
