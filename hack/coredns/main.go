// Command coredns is CoreDNS with only the plugins faultline's local cluster
// uses: the kubernetes plugin watching the local apiserver, the metrics the
// DNS pressure analysis reads, and what a cluster's Corefile usually holds
// around them. hack/coredns/build compiles it; hack/coredns/up runs it.
package main

import (
	"fmt"
	"os"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/autopath"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// plugins are the directives this build registers (the metrics package's
// directive is "prometheus"). whoami stands in for forward: nothing here may
// send a query off the machine.
var plugins = []string{
	"autopath", "bind", "cache", "errors", "health", "kubernetes",
	"loadbalance", "log", "prometheus", "ready", "whoami",
}

func main() {
	order, err := directives(dnsserver.Directives, plugins)
	if err != nil {
		fmt.Fprintln(os.Stderr, "coredns:", err)
		os.Exit(1)
	}
	dnsserver.Directives = order
	coremain.Run()
}

// directives keeps of CoreDNS's own order (every plugin sees the effects of
// those after it, so cache must come before kubernetes, autopath before
// cache, and so on) the directives this build registers.
func directives(upstream, want []string) ([]string, error) {
	wanted := make(map[string]bool, len(want))
	for _, w := range want {
		wanted[w] = true
	}
	var order []string
	for _, d := range upstream {
		if wanted[d] {
			order = append(order, d)
			delete(wanted, d)
		}
	}
	for _, w := range want {
		if wanted[w] {
			return nil, fmt.Errorf("directive %q is not in CoreDNS's order; is the plugin renamed?", w)
		}
	}
	return order, nil
}
