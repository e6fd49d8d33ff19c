package main

import (
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

type embeddedEtcd struct {
	server    *embed.Etcd
	clientURL string
}

func (e *embeddedEtcd) Close() { e.server.Close() }

// startEtcd runs etcd in process on loopback; fsync is off because the data is test data.
func startEtcd(dir string, clientPort int) (*embeddedEtcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	client, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort+1))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, peer.String())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return &embeddedEtcd{server: e, clientURL: client.String()}, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 60 s")
	}
}
