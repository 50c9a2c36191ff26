// Command etcd is a thin wrapper around go.etcd.io/etcd/server/v3/etcdmain,
// built by hack/build-control-plane.sh for the local test cluster.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
