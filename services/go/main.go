// Command ipclab-shop starts one role of a Go shop stack, configured like
// services/serve.py by environment only: IPCLAB_ROLE, IPCLAB_GATEWAY, IPCLAB_SERVICES,
// IPCLAB_TRANSPORT (rest|grpc|amqp), IPCLAB_HOST/PORT, IPCLAB_ADDR_<ROLE>,
// IPCLAB_AMQP_URL, IPCLAB_CALL_TIMEOUT_S, IPCLAB_SEQUENTIAL, and the data: IPCLAB_FIXTURE
// (the JSON file ipclab_services.domains.shop.write_fixture writes), checked against
// IPCLAB_SEED, IPCLAB_CATALOGUE_SIZE and IPCLAB_CUSTOMERS; with IPCLAB_STORE=db the
// services read their records from the stores at IPCLAB_MONGO_URL and IPCLAB_MYSQL_URL.
package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func env(key, fallback string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return fallback
}

func envInt(key, fallback string) int64 {
	v, err := strconv.ParseInt(env(key, fallback), 10, 64)
	if err != nil {
		log.Fatalf("%s must be an integer: %v", key, err)
	}
	return v
}

func addrEnv(role string) string {
	return "IPCLAB_ADDR_" + strings.ReplaceAll(strings.ToUpper(role), "-", "_")
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	role := os.Getenv("IPCLAB_ROLE")
	var services []string
	for _, s := range strings.Split(os.Getenv("IPCLAB_SERVICES"), ",") {
		if s != "" {
			services = append(services, s)
		}
	}
	transport := os.Getenv("IPCLAB_TRANSPORT")
	addr := net.JoinHostPort(env("IPCLAB_HOST", "127.0.0.1"), env("IPCLAB_PORT", "0"))
	amqpURL := os.Getenv("IPCLAB_AMQP_URL")

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		os.Exit(0)
	}()

	if role == "bench" {
		if err := runBench(transport, amqpURL); err != nil {
			log.Fatal(err)
		}
		return
	}
	if role == env("IPCLAB_GATEWAY", "gateway") {
		seconds, err := strconv.ParseFloat(env("IPCLAB_CALL_TIMEOUT_S", "2.0"), 64)
		if err != nil {
			log.Fatalf("IPCLAB_CALL_TIMEOUT_S: %v", err)
		}
		clients, err := connect(transport, services, amqpURL)
		if err != nil {
			log.Fatalf("connect (%s): %v", transport, err)
		}
		defer clients.Close()
		g := &gateway{clients, services, time.Duration(seconds * float64(time.Second)),
			env("IPCLAB_SEQUENTIAL", "0") == "1"}
		log.Fatal(serveGateway(g, addr))
	}

	if transport == "echo" { // the floor of bench/transports.py: no data, no service logic
		log.Fatal(serveEcho(addr))
	}
	known := false
	for _, s := range services {
		known = known || s == role
	}
	if !known {
		log.Fatalf("unknown role %q; this stack's services: %s", role, strings.Join(services, ", "))
	}
	f, err := loadFixture(os.Getenv("IPCLAB_FIXTURE"), envInt("IPCLAB_SEED", "42"),
		envInt("IPCLAB_CATALOGUE_SIZE", "1000"), envInt("IPCLAB_CUSTOMERS", "500"))
	if err != nil {
		log.Fatal(err)
	}
	if os.Getenv(storeEnv) == "db" { // --store db: the records from the stores (stores.go)
		if f.db, err = newStores(os.Getenv(mongoEnv), os.Getenv(mysqlEnv)); err != nil {
			log.Fatal(err)
		}
	}
	switch transport {
	case "rest":
		err = serveREST(f, role, addr)
	case "grpc":
		err = serveGRPC(f, role, addr)
	case "amqp":
		err = serveAMQP(f, role, amqpURL)
	default:
		err = fmt.Errorf("unknown transport %q (rest, grpc, amqp)", transport)
	}
	log.Fatal(err)
}

func connect(transport string, services []string, amqpURL string) (Clients, error) {
	addresses := map[string]string{}
	for _, s := range services {
		if a, ok := os.LookupEnv(addrEnv(s)); ok {
			addresses[s] = a
		}
	}
	switch transport {
	case "rest":
		return newRESTClients(addresses), nil
	case "grpc":
		return newGRPCClients(addresses)
	case "amqp":
		return newAMQPClients(services, amqpURL)
	}
	return nil, fmt.Errorf("unknown transport %q (rest, grpc, amqp)", transport)
}
