// Module promtool builds Prometheus's promtool, which faultline's tests use to
// check the alerting rules `faultline alerts export` writes. It is kept out of
// faultline's own go.mod: see README.md.
module github.com/faultline/faultline/hack/promtool

go 1.26.7

require github.com/prometheus/prometheus v0.316.0
