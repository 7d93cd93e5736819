module github.com/agent-gateway/agent-gateway

go 1.26.8

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/go-chi/httprate v0.16.1 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/zeebo/xxh3 v1.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
