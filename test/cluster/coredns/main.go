// Command coredns is CoreDNS (github.com/coredns/coredns, pinned in go.mod) with only the plugins
// the test cluster's DNS uses, the way CoreDNS documents custom builds: a main that imports the
// plugins and lists them in the order plugin.cfg gives them. No forward plugin: the cluster's DNS
// answers for cluster.local only and never sends a query off the machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The order of plugin.cfg, which decides the order a query passes the plugins in.
var directives = []string{"reload", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes", "loop"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
