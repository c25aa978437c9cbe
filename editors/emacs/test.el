;;; test.el --- headless test of vramlint with Eglot  -*- lexical-binding: t; -*-

;; Run by cmd/vramlint/editor_test.go:
;;   emacs --batch -L editors/emacs -l test.el
;; Opens $VRAMLINT_EMACS_FILE, connects Eglot with the contact vramlint.el
;; registers, waits for Flymake diagnostics, applies each diagnostic's first
;; quick fix through Eglot, saves, and writes a report to
;; $VRAMLINT_EMACS_OUT.  Idle timers do not run in batch mode, so the
;; change notifications and Flymake checks they would start are started
;; here by hand.

;;; Code:

(require 'vramlint)
(require 'vramlint-test-common)
(require 'flymake)
(vramlint-eglot-setup)


(defun vramlint-test-codes ()
  (let ((codes (mapcar (lambda (d)
                         (let ((lsp (cdr (assoc 'eglot-lsp-diag (eglot--diag-data d)))))
                           (format "%s@%d" (plist-get lsp :code)
                                   (line-number-at-pos (flymake-diagnostic-beg d)))))
                       (flymake-diagnostics))))
    (mapconcat #'identity (sort codes #'string<) " ")))

(find-file (getenv "VRAMLINT_EMACS_FILE"))
(let ((contact (cdr (assoc vramlint-major-modes eglot-server-programs))))
  (eglot '(python-mode) (cons 'transient default-directory) 'eglot-lsp-server contact "python"))
(vramlint-test-wait #'flymake-diagnostics)
(vramlint-test-say (concat "diagnostics: " (vramlint-test-codes)))

(let ((rounds 0))
  (while (and (flymake-diagnostics) (< rounds 10))
    (setq rounds (1+ rounds))
    (let* ((diag (car (flymake-diagnostics)))
           (before (length (flymake-diagnostics)))
           (actions (eglot-code-actions (flymake-diagnostic-beg diag) (flymake-diagnostic-end diag) "quickfix"))
           (action (car actions)))
      (if (not action)
          (progn (vramlint-test-say "no action") (setq rounds 10))
        (vramlint-test-say (concat "apply: " (plist-get action :title)))
        (eglot--apply-workspace-edit (plist-get action :edit))
        (eglot--signal-textDocument/didChange)
        (vramlint-test-wait (lambda ()
                              (flymake-start)
                              (accept-process-output nil 0.1)
                              (< (length (flymake-diagnostics)) before)))))))

(vramlint-test-say (concat "remaining: " (vramlint-test-codes)))
(save-buffer)
(vramlint-test-say "done")
(kill-emacs 0)
;;; test.el ends here
