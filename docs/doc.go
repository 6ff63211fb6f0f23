// Package docs holds the project's own documentation (the Markdown files
// beside this one). It has no code: its test checks that every reference to
// these documents from the module's code and documents resolves, and that
// nothing cites a document the module does not contain.
package docs
