//go:build tools

// Package apiserver pins the kube-apiserver that the kube-lease backend runs.
package apiserver

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
