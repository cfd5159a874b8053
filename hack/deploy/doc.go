// Package deploy holds no code: its directory holds what runs vhcrd in a
// fleet (the container image definition, Kubernetes manifests, the
// systemd unit, Prometheus alert rules, the Grafana dashboard), and its
// tests parse them with the tools they are written for (see check.sh).
package deploy
