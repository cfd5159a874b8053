package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/vhcrd/vhcrd/vhcr/vhcrbench"
)

func init() {
	register("bench", "measure round trips: physical limit, NOP through vhcrd, UNIX socket (medians, p99, ratios)", runBench)
	register("bench-peer", "(internal) the peer process of vfctl bench", vhcrbench.Peer)
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	vhcrd := fs.String("vhcrd", "bin/vhcrd", "the vhcrd binary to measure")
	rounds := fs.Int("rounds", 5, "interleaved rounds")
	iters := fs.Int("iters", 100000, "round trips per round for the shared-memory figures")
	sock := fs.Int("sock-iters", 10000, "round trips per round for the socket")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	res, err := vhcrbench.Run(context.Background(), vhcrbench.Options{PeerArg: "bench-peer", VHCRD: *vhcrd,
		Rounds: *rounds, Iters: *iters, SockIters: *sock, Log: os.Stderr})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("%-34s %10s %10s   (medians over %d rounds)\n", "round trip", "median", "p99", *rounds)
	for _, f := range []vhcrbench.Figure{res.Physical, res.NOP, res.Socket} {
		fmt.Printf("%-34s %8.0f ns %8.0f ns\n", f.Name, f.MedianNS, f.P99NS)
	}
	fmt.Printf("b/a = %.2f   (vhcrd NOP / physical limit; target <= 1.5)\n", res.BOverA)
	fmt.Printf("c/b = %.1f    (UNIX socket / vhcrd NOP; target >= 15)\n", res.COverB)
	return nil
}
