package main

// TLS for a stack started with --tls (issue 32), as services/tls.py builds it for the
// Python roles: the stack's private authority (IPCLAB_TLS_CA), its certificate and key
// (IPCLAB_TLS_CERT, IPCLAB_TLS_KEY); servers present the certificate, clients trust the
// authority alone and check the peer's name; TLS 1.3 at least. Without IPCLAB_TLS_CA every
// role speaks in the clear, as before. IPCLAB_TLS_HOPS=edge (--tls-hops edge, issue 50:
// the gateway alone gets the files then) keeps the role's clients in the clear: it serves
// HTTPS and dials the services and the broker in plain text (clientTLSOn is false).

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net/http"
	"os"
)

// tlsOn says whether the role's environment gives the stack's TLS files.
func tlsOn() bool { return os.Getenv("IPCLAB_TLS_CA") != "" }

// clientTLSOn says whether the role's clients dial their peers over TLS: every hop encrypted.
func clientTLSOn() bool { return tlsOn() && os.Getenv("IPCLAB_TLS_HOPS") != "edge" }

func tlsFile(key string) string {
	path := os.Getenv(key)
	if path == "" {
		log.Fatalf("IPCLAB_TLS_CA is set but %s is not", key)
	}
	return path
}

// serverTLS is a server's configuration: the stack's certificate, TLS 1.3 at least.
func serverTLS() *tls.Config {
	pair, err := tls.LoadX509KeyPair(tlsFile("IPCLAB_TLS_CERT"), tlsFile("IPCLAB_TLS_KEY"))
	if err != nil {
		log.Fatalf("the stack's certificate: %v", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
}

// clientTLS is a client's configuration: the stack's authority alone, TLS 1.3 at least.
func clientTLS() *tls.Config {
	pem, err := os.ReadFile(tlsFile("IPCLAB_TLS_CA"))
	if err != nil {
		log.Fatalf("the stack's authority: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		log.Fatalf("the stack's authority: no certificate in %s", tlsFile("IPCLAB_TLS_CA"))
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13}
}

// listen serves s over TLS when the stack has it (HTTP/1.1 only, as the Python roles:
// no h2 by ALPN), else in the clear.
func listen(s *http.Server) error {
	if !tlsOn() {
		return s.ListenAndServe()
	}
	s.TLSConfig = serverTLS()
	s.TLSConfig.NextProtos = []string{"http/1.1"}
	s.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	return s.ListenAndServeTLS("", "")
}

// httpScheme is the scheme of the stack's HTTP hops (the gateway's calls to the services).
func httpScheme() string {
	if clientTLSOn() {
		return "https"
	}
	return "http"
}

func init() {
	if tlsOn() {
		for _, key := range []string{"IPCLAB_TLS_CA", "IPCLAB_TLS_CERT", "IPCLAB_TLS_KEY"} {
			if _, err := os.Stat(tlsFile(key)); err != nil {
				log.Fatal(fmt.Errorf("TLS file %s: %w", key, err))
			}
		}
	}
}
