package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// clusterFiles are the credentials the control plane needs, created once per data directory so
// a restart with the same directory keeps tokens and signed ServiceAccount tokens valid.
type clusterFiles struct {
	certDir        string
	serviceAcctKey string
	tokenFile      string
	adminToken     string
}

func prepareFiles(dataDir string) (clusterFiles, error) {
	f := clusterFiles{
		certDir:        filepath.Join(dataDir, "certs"),
		serviceAcctKey: filepath.Join(dataDir, "sa.key"),
		tokenFile:      filepath.Join(dataDir, "tokens.csv"),
	}
	if err := os.MkdirAll(f.certDir, 0o700); err != nil {
		return f, err
	}
	if err := ensureRSAKey(f.serviceAcctKey); err != nil {
		return f, err
	}
	token, err := ensureAdminToken(f.tokenFile)
	f.adminToken = token
	return f, err
}

func ensureRSAKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

// ensureAdminToken writes a static token file with one user in system:masters.
func ensureAdminToken(path string) (string, error) {
	tokenPath := path + ".admin"
	if b, err := os.ReadFile(tokenPath); err == nil {
		return string(b), nil
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n", token)), 0o600); err != nil {
		return "", err
	}
	return token, os.WriteFile(tokenPath, []byte(token), 0o600)
}

// writeKubeconfig trusts the serving certificate chain kube-apiserver generated in certDir.
func writeKubeconfig(path, host string, port int, f clusterFiles) error {
	ca, err := os.ReadFile(filepath.Join(f.certDir, "apiserver.crt"))
	if err != nil {
		return fmt.Errorf("reading the serving certificate: %w", err)
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testcluster
  cluster:
    server: https://%s:%d
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: testcluster
  context: {cluster: testcluster, user: admin, namespace: default}
current-context: testcluster
`, host, port, base64.StdEncoding.EncodeToString(ca), f.adminToken)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
