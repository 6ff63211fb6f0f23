package main

import "github.com/goverbs/rdma/cmd/internal/tutorial"

func main() { tutorial.Run(true) }
