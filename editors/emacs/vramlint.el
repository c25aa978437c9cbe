;;; vramlint.el --- use vramlint's language server with Eglot  -*- lexical-binding: t; -*-

;; Load this file (or copy its forms into your init file); the `vramlint'
;; binary must be on `exec-path'.  Diagnostics appear through Flymake;
;; `M-x eglot-code-actions' offers vramlint's fixes.

;;; Code:

(require 'eglot)

(add-to-list 'eglot-server-programs
             '((python-mode python-ts-mode) . ("vramlint" "server")))
(add-hook 'python-mode-hook #'eglot-ensure)

(provide 'vramlint)
;;; vramlint.el ends here
