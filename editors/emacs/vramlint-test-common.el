;;; vramlint-test-common.el --- helpers of the headless editor tests  -*- lexical-binding: t; -*-

;; Loaded by test.el (Eglot) and test-lsp-mode.el (lsp-mode): the report
;; file the Go test reads, and a wait that lets process output in (idle
;; timers do not run in batch mode).

;;; Code:

(defvar vramlint-test-report (getenv "VRAMLINT_EMACS_OUT"))

(defun vramlint-test-say (line)
  "Append LINE to the report."
  (append-to-file (concat line "\n") nil vramlint-test-report))

(defun vramlint-test-wait (pred)
  "Read process output until PRED holds, for at most 10 s; return PRED."
  (let ((tries 0))
    (while (and (< tries 200) (not (funcall pred)))
      (accept-process-output nil 0.05)
      (setq tries (1+ tries)))
    (funcall pred)))

(provide 'vramlint-test-common)
;;; vramlint-test-common.el ends here
