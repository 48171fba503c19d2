package quic

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	stdnet "net"
	"time"

	"github.com/throng-go/throng/net/internal/link"
)

// ALPN is the application protocol name a Throng server and its clients
// negotiate in the TLS handshake of a QUIC connection. A peer that offers
// another is turned away by TLS before it reaches the server.
const ALPN = link.ALPN

// developmentValidity is how long a development certificate is valid.
const developmentValidity = 30 * 24 * time.Hour

// DevelopmentTLS returns a TLS 1.3 server configuration with a freshly
// generated, self-signed ECDSA P-256 certificate for "localhost",
// 127.0.0.1 and ::1, valid for 30 days, and [ALPN] as its only protocol.
//
// It is for development and tests on loopback only: no client can verify
// the certificate against a CA, so clients must skip verification
// (client.Config.InsecureSkipVerify), which leaves them open to anyone who
// can intercept their traffic. Production servers load a real certificate
// ([Config.CertFile]).
func DevelopmentTLS() (*tls.Config, error) {
	certPEM, keyPEM, err := developmentCertificate(time.Now())
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("quic: development certificate: %w", err)
	}
	return serverTLS(cert), nil
}

// developmentCertificate generates a self-signed certificate and its key,
// both PEM encoded.
func developmentCertificate(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: development key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("quic: development certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"Throng development"}, CommonName: "localhost"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(developmentValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: it is its own root for clients that pin it
		DNSNames:              []string{"localhost"},
		IPAddresses:           []stdnet.IP{stdnet.IPv4(127, 0, 0, 1), stdnet.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: development certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: development key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// serverTLS is the TLS configuration a QUIC server runs with for cert.
func serverTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{ALPN},
		MinVersion:   tls.VersionTLS13,
	}
}

// quicServerTLS picks the server's TLS configuration from cfg: TLS as
// given (with ALPN added when it names no protocol), else the certificate
// files, else a development certificate when Development is set.
func quicServerTLS(cfg *Config) (*tls.Config, error) {
	switch {
	case cfg.TLS != nil:
		t := cfg.TLS.Clone()
		if len(t.NextProtos) == 0 {
			t.NextProtos = []string{ALPN}
		}
		t.MinVersion = tls.VersionTLS13
		return t, nil
	case cfg.CertFile != "" || cfg.KeyFile != "":
		if cfg.CertFile == "" || cfg.KeyFile == "" {
			return nil, errors.New("quic: Config needs both CertFile and KeyFile")
		}
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("quic: loading the TLS certificate: %w", err)
		}
		return serverTLS(cert), nil
	case cfg.Development:
		return DevelopmentTLS()
	}
	return nil, errors.New("quic: Config has no certificate: set CertFile and KeyFile, TLS, or Development for a self-signed one")
}
