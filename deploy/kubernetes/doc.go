// Package kubernetes holds npugrade's Kubernetes manifests (base/ and the
// Kustomize overlays under overlays/) and the test that decodes each of
// them strictly into the k8s.io/api types and checks the deployment
// rules; it has no code of its own.
package kubernetes
