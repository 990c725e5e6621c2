// Package org stores organizations: the tenant every key, image and template
// belongs to, its plan, and whether it is active or suspended.
package org
