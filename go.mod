module github.com/goverbs/rdma

go 1.26.0

require (
	github.com/stretchr/testify v1.12.1
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/arch v0.33.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/vishvananda/netns v0.0.5 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
