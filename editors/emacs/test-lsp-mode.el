;;; test-lsp-mode.el --- headless test of vramlint as an lsp-mode add-on  -*- lexical-binding: t; -*-

;; Run by cmd/vramlint/editor_test.go:
;;   emacs --batch -L editors/emacs -l test-lsp-mode.el
;; Loads lsp-mode and vramlint.el the way the README says, opens
;; $VRAMLINT_EMACS_FILE in `python-mode' and starts lsp-mode there (with no
;; other Python server installed, vramlint, an add-on, is the only one),
;; waits for the diagnostics, applies each diagnostic's first quick fix
;; through lsp-mode's own code-action machinery, saves, and writes a report
;; to $VRAMLINT_EMACS_OUT in the same form as test.el.

;;; Code:

(require 'lsp-mode)
(require 'vramlint)
(require 'vramlint-test-common)

(defvar vramlint-test-dir (file-name-directory (getenv "VRAMLINT_EMACS_FILE")))

;; A session of its own, no prompts, no watchers, no other servers.
(setq lsp-session-file (expand-file-name "lsp-session" vramlint-test-dir)
      lsp-auto-guess-root t
      lsp-guess-root-without-session t
      lsp-enable-file-watchers nil
      lsp-restart 'ignore
      lsp-keep-workspace-alive nil
      lsp-enable-snippet nil
      lsp-diagnostics-provider :none
      lsp-modeline-code-actions-enable nil
      lsp-modeline-workspace-status-enable nil
      lsp-headerline-breadcrumb-enable nil
      lsp-auto-execute-action nil
      lsp-enabled-clients '(vramlint))

(defun vramlint-test-diagnostics ()
  (gethash (lsp--fix-path-casing buffer-file-name) (lsp-diagnostics t)))

(defun vramlint-test-codes ()
  (let ((codes (mapcar (lambda (d)
                         (format "%s@%d" (lsp-get d :code)
                                 (1+ (lsp-get (lsp-get (lsp-get d :range) :start) :line))))
                       (vramlint-test-diagnostics))))
    (mapconcat #'identity (sort codes #'string<) " ")))

(vramlint-test-say (format "add-on: %s" (lsp--client-add-on? (gethash 'vramlint lsp-clients))))
(vramlint-test-say (format "modes: %s" vramlint-major-modes))
(find-file (getenv "VRAMLINT_EMACS_FILE"))
(python-mode)
(lsp)
(vramlint-test-wait #'vramlint-test-diagnostics)
(vramlint-test-say (concat "diagnostics: " (vramlint-test-codes)))

(let ((rounds 0))
  (while (and (vramlint-test-diagnostics) (< rounds 10))
    (setq rounds (1+ rounds))
    (let* ((diag (car (sort (copy-sequence (vramlint-test-diagnostics))
                            (lambda (a b) (< (lsp-get (lsp-get (lsp-get a :range) :start) :line)
                                             (lsp-get (lsp-get (lsp-get b :range) :start) :line))))))
           (before (length (vramlint-test-diagnostics)))
           (start (lsp--position-to-point (lsp-get (lsp-get diag :range) :start)))
           (action (progn
                     (goto-char start)
                     (seq-find (lambda (a) (equal (lsp-get a :kind) "quickfix"))
                               (lsp-code-actions-at-point)))))
      (if (not action)
          (progn (vramlint-test-say "no action") (setq rounds 10))
        (vramlint-test-say (concat "apply: " (lsp-get action :title)))
        (lsp-execute-code-action action)
        (vramlint-test-wait (lambda () (< (length (vramlint-test-diagnostics)) before)))))))

(vramlint-test-say (concat "remaining: " (vramlint-test-codes)))
(save-buffer)
(vramlint-test-say "done")
(kill-emacs 0)
;;; test-lsp-mode.el ends here
