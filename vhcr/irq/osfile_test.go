package irq

import "os"

func osFile(fd int) *os.File { return os.NewFile(uintptr(fd), "socket") }
