package wsconn

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
)

// keyGUID is what RFC 6455 appends to a client's key before hashing it.
const keyGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + keyGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// AcceptOptions say which requests Accept takes.
type AcceptOptions struct {
	// Subprotocols the server speaks, by preference; the first the client
	// asks for is agreed on. A client that asks for none of them is
	// accepted with none (Subprotocol is ""), for the caller to refuse
	// with a close that says why.
	Subprotocols []string
	// OriginPatterns are host patterns (path.Match syntax, case folded)
	// of the pages allowed to connect besides the server's own host. A
	// request without an Origin (not a browser's) is always let in.
	OriginPatterns []string
}

// Accept answers a WebSocket opening handshake and takes the connection
// over from the HTTP server. A request that is not one, or that comes
// from a page whose origin is not allowed, is answered with an HTTP error
// and an error is returned.
func Accept(w http.ResponseWriter, r *http.Request, opts AcceptOptions) (*Conn, error) {
	if code, err := checkRequest(w, r); err != nil {
		http.Error(w, err.Error(), code)
		return nil, err
	}
	if err := checkOrigin(r, opts.OriginPatterns); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return nil, err
	}
	sub := ""
	for _, want := range opts.Subprotocols {
		if slices.Contains(headerTokens(r.Header, "Sec-WebSocket-Protocol"), want) {
			sub = want
			break
		}
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		err := errors.New("wsconn: the HTTP connection cannot be taken over (http.Hijacker)")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, err
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, fmt.Errorf("wsconn: taking the connection over: %w", err)
	}
	// The HTTP server's deadlines end with the request; a WebSocket lives on.
	_ = nc.SetDeadline(time.Time{})
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		acceptKey(strings.TrimSpace(r.Header.Get("Sec-WebSocket-Key"))) + "\r\n"
	if sub != "" {
		resp += "Sec-WebSocket-Protocol: " + sub + "\r\n"
	}
	if _, err := brw.WriteString(resp + "\r\n"); err != nil {
		nc.Close()
		return nil, err
	}
	if err := brw.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return newConn(nc, brw.Reader, false, sub), nil
}

// checkRequest returns the HTTP status and why for a request that is not a
// WebSocket opening handshake of version 13.
func checkRequest(w http.ResponseWriter, r *http.Request) (int, error) {
	if !r.ProtoAtLeast(1, 1) {
		return http.StatusUpgradeRequired, fmt.Errorf("a WebSocket handshake needs HTTP/1.1, not %s", r.Proto)
	}
	if !hasToken(r.Header, "Connection", "upgrade") || !hasToken(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		return http.StatusUpgradeRequired, errors.New("not a WebSocket handshake (Connection: Upgrade, Upgrade: websocket)")
	}
	if r.Method != http.MethodGet {
		return http.StatusMethodNotAllowed, fmt.Errorf("a WebSocket handshake is a GET, not %s", r.Method)
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		return http.StatusBadRequest, fmt.Errorf("WebSocket version %q: only 13 is spoken", r.Header.Get("Sec-WebSocket-Version"))
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return http.StatusBadRequest, errors.New("a WebSocket handshake needs one Sec-WebSocket-Key")
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(k) != 16 {
		return http.StatusBadRequest, fmt.Errorf("Sec-WebSocket-Key %q is not 16 bytes in base64", keys[0])
	}
	return 0, nil
}

// checkOrigin lets in a request without an Origin, from the server's own
// host, or from a host one of patterns matches.
func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("origin %q is not a URL: %w", origin, err)
	}
	if u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	for _, p := range patterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		ok, err := path.Match(strings.ToLower(p), strings.ToLower(target))
		if err != nil {
			return fmt.Errorf("origin pattern %q: %w", p, err)
		}
		if ok && u.Host != "" {
			return nil
		}
	}
	return fmt.Errorf("origin %q is not allowed to connect to %q", origin, r.Host)
}

// headerTokens are the comma-separated tokens of every value of header
// name, trimmed.
func headerTokens(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

func hasToken(h http.Header, name, token string) bool {
	return slices.ContainsFunc(headerTokens(h, name), func(t string) bool { return strings.EqualFold(t, token) })
}

// DialOptions say how Dial connects.
type DialOptions struct {
	// Subprotocols the client asks for, by preference.
	Subprotocols []string
	// TLS configures wss:// (nil: the system's roots, the URL's host).
	TLS *tls.Config
}

// Dial opens a WebSocket to rawURL (ws:// or wss://). ctx bounds the
// connection and the handshake; the Conn outlives it. A server that
// answers without upgrading is an error with its HTTP status.
func Dial(ctx context.Context, rawURL string, opts DialOptions) (*Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	host := u.Host
	switch u.Scheme {
	case "ws":
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	case "wss":
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "443")
		}
	default:
		return nil, fmt.Errorf("wsconn: %q is not a ws:// or wss:// URL", rawURL)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	// The handshake ends when ctx does.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	c, err := handshake(ctx, nc, u, opts)
	if !stop() || err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return c, nil
}

func handshake(ctx context.Context, nc net.Conn, u *url.URL, opts DialOptions) (*Conn, error) {
	if u.Scheme == "wss" {
		conf := &tls.Config{}
		if opts.TLS != nil {
			conf = opts.TLS.Clone()
		}
		if conf.ServerName == "" {
			conf.ServerName = u.Hostname()
		}
		conf.NextProtos = []string{"http/1.1"}
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		nc = tc
	}
	var k [16]byte
	_, _ = rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n"
	if len(opts.Subprotocols) > 0 {
		req += "Sec-WebSocket-Protocol: " + strings.Join(opts.Subprotocols, ", ") + "\r\n"
	}
	if _, err := nc.Write([]byte(req + "\r\n")); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(nc, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet, URL: u})
	if err != nil {
		return nil, fmt.Errorf("wsconn: reading the handshake's answer: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, fmt.Errorf("wsconn: the server answered %s, not 101 Switching Protocols", resp.Status)
	}
	if !hasToken(resp.Header, "Connection", "upgrade") || !hasToken(resp.Header, "Upgrade", "websocket") ||
		resp.Header.Get("Sec-WebSocket-Accept") != acceptKey(key) {
		return nil, errors.New("wsconn: the server's answer is not a WebSocket upgrade of this key")
	}
	sub := resp.Header.Get("Sec-WebSocket-Protocol")
	if sub != "" && !slices.Contains(opts.Subprotocols, sub) {
		return nil, fmt.Errorf("wsconn: the server chose subprotocol %q, which was not asked for", sub)
	}
	if resp.Header.Get("Sec-WebSocket-Extensions") != "" {
		return nil, errors.New("wsconn: the server chose an extension, which was not asked for")
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	return newConn(nc, br, true, sub), nil
}
