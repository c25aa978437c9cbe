;;; vramlint.el --- vramlint's language server in Emacs (Eglot or lsp-mode)  -*- lexical-binding: t; -*-

;; vramlint finds the PyTorch code that wastes or leaks GPU memory.  The
;; `vramlint' binary must be on `exec-path' (or set `vramlint-command').
;;
;; lsp-mode (8.0 and later): vramlint is registered as an add-on server, so
;; it runs beside your Python server (pyright, pylsp, ...) in `python-mode'
;; and `python-ts-mode'.  Load this file and use lsp-mode as usual:
;;
;;   (require 'vramlint)
;;   (add-hook 'python-mode-hook #'lsp-deferred)
;;
;; Eglot (1.9 and later) runs one server per buffer, so vramlint replaces
;; your Python server there unless a multiplexer combines them (see the
;; README).  To use vramlint as that one server:
;;
;;   (require 'vramlint)
;;   (vramlint-eglot-setup)
;;
;; Diagnostics appear through Flymake (Eglot) or Flycheck/Flymake
;; (lsp-mode); the code actions offer vramlint's fixes.

;;; Code:

(defgroup vramlint nil
  "PyTorch GPU-memory anti-patterns, through vramlint's language server."
  :group 'tools)

(defcustom vramlint-command '("vramlint" "server")
  "Command that starts vramlint's language server."
  :type '(repeat string))

(defcustom vramlint-settings nil
  "Server settings, as a plist: select, ignore, extendSelect, severity,
unsafeFixes, debounce, logLevel, diagnosticMode.  What is left out comes from
[tool.vramlint] in pyproject.toml."
  :type 'plist)

(defconst vramlint-major-modes '(python-mode python-ts-mode)
  "Major modes vramlint runs in.")

;;;###autoload
(defun vramlint-eglot-setup ()
  "Make Eglot use vramlint as the server of Python buffers, and start it."
  (require 'eglot)
  (add-to-list 'eglot-server-programs
               (cons vramlint-major-modes
                     (append vramlint-command
                             (list :initializationOptions
                                   (lambda (_server) (or vramlint-settings '(:debounce 100)))))))
  (dolist (mode vramlint-major-modes)
    (add-hook (intern (format "%s-hook" mode)) #'eglot-ensure)))

(with-eval-after-load 'lsp-mode
  (when (fboundp 'lsp-register-client)
    (lsp-register-client
     (make-lsp-client
      :new-connection (lsp-stdio-connection (lambda () vramlint-command))
      :activation-fn (lambda (_file-name major-mode)
                       (memq major-mode vramlint-major-modes))
      :add-on? t
      :server-id 'vramlint
      :initialization-options (lambda () (or vramlint-settings '(:debounce 100)))))))

(provide 'vramlint)
;;; vramlint.el ends here
